"""`./inv bench`: copylab against iperf3 on the same link, the harness's own cost, the copy limit and the study's
time goals (copylab.bench.goals runs them all; each other module measures one concern)."""
