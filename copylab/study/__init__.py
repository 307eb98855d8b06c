"""The study as one job: the sweeps ./inv report runs under one measurement budget, their analyses and the report
rendered from them."""

# ./inv report's measurement budget, in seconds: the first pass of every sweep, then the blocks of undecided
# comparisons (copylab.study.budget).  Building, analysing and rendering come on top (docs/performance.md).
REPORT_BUDGET_S = 250.0
