"""The study as one job: the sweeps ./inv report runs under one measurement budget, their analyses and the report
rendered from them."""
