"""The analysis tables written next to a sweep's trials, their columns and types declared once.

copylab.analysis.stats and copylab.analysis.crossover produce them, copylab.record.store writes and reads them with
these
types, so a boolean stays a boolean and a count an integer after a round trip through CSV.
"""

from __future__ import annotations

import pandas as pd

# One configuration of a sweep.  Comparisons pair contenders (an implementation with a receive mode,
# copylab.declarations.implementations.contender) at one point of the settings; a curve is every point that differs only
# along the experiment's axis (message size for copies, connections for servers; copylab.analysis.stats.curve_keys).
CONFIG_KEYS = (
    "implementation",
    "workload",
    "size_bytes",
    "threads",
    "connections",
    "idle_connections",
    "offered_rate",
    "pinning",
    "receive",
    "layout",
)
# What tells apart the contenders compared at one point (copylab.declarations.implementations.contender).
CONTENDER_KEYS = ("implementation", "receive", "layout")
POINT_KEYS = ("workload", "size_bytes", "threads", "connections", "idle_connections", "offered_rate", "pinning")

_CONFIG_TYPES = {
    "implementation": "str",
    "workload": "str",
    "size_bytes": "int64",
    "threads": "int64",
    "connections": "int64",
    "idle_connections": "int64",
    "offered_rate": "int64",
    "pinning": "str",
    "receive": "str",
    "layout": "str",
}
_POINT_TYPES = {key: _CONFIG_TYPES[key] for key in POINT_KEYS}

SUMMARY: dict[str, str] = {
    **_CONFIG_TYPES,
    "metric": "str",
    "n": "int64",
    "n_failed": "int64",
    "mean": "float64",
    "std": "float64",
    "cv": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
    "unstable": "bool",
}
COMPARISONS: dict[str, str] = {
    **_POINT_TYPES,
    "metric": "str",
    "challenger": "str",
    "baseline": "str",
    "ratio": "float64",
    "ratio_ci_low": "float64",
    "ratio_ci_high": "float64",
    "p_value": "float64",
    "p_holm": "float64",
    "significant": "bool",
    "challenger_better": "bool",
    "method": "str",  # paired (within-block ratios of a blocked design) or unpaired (Welch, Fieller)
    "n_pairs": "Int64",  # blocks both contenders ran in (paired only)
}
# A crossover row is a curve: its axis column is empty (<NA>), the point along it is crossover_at.
CROSSOVERS: dict[str, str] = {
    "axis": "str",
    **{key: "Int64" if dtype == "int64" else dtype for key, dtype in _POINT_TYPES.items()},
    "metric": "str",
    "challenger": "str",
    "baseline": "str",
    "status": "str",
    "crossover_at": "float64",
    "ci_low": "float64",
    "ci_high": "float64",
    "first_significant_at": "Int64",
    # The model's (copylab.analysis.curve_model; empty for a curve compared unpaired):
    "lack_of_fit_p": "float64",  # the point means' departures from the polynomial; below 0.01, it runs through them
    "replication": "float64",  # the share of simulated second runs that reach the same verdict
    "sure": "bool",  # a decided verdict with replication at curve_model.SURE or more
    "largest_difference": "float64",  # the largest share either way the curve's band allows over the range
    "more_blocks": "float64",  # about how many more blocks would decide an open verdict
    "decide_at": "float64",  # the measured point where the band is widest for what it must decide
    "tested_status": "str",  # the per-point check: Holm-corrected tests at each point (crossover.classify)
}
TABLES: dict[str, dict[str, str]] = {"summary": SUMMARY, "comparisons": COMPARISONS, "crossovers": CROSSOVERS}

# comparison.csv of two runs A and B of one experiment (copylab.analysis.two_runs): one row per configuration either
# holds
# and compared metric; the ratio is B/A.  Not one of a sweep's TABLES: it lives with the comparison.
RUN_COMPARISON: dict[str, str] = {
    **_CONFIG_TYPES,
    "metric": "str",
    "verdict": "str",  # copylab.analysis.two_runs.VERDICTS
    "n_a": "int64",
    "mean_a": "float64",
    "n_b": "int64",
    "mean_b": "float64",
    "ratio": "float64",
    "ratio_ci_low": "float64",
    "ratio_ci_high": "float64",
    "p_value": "float64",
    "p_holm": "float64",
}


def typed(name: str, frame: pd.DataFrame) -> pd.DataFrame:
    """FRAME with exactly the columns of table NAME, in order, each of its declared type."""
    return typed_as(TABLES[name], frame)


def typed_as(columns: dict[str, str], frame: pd.DataFrame) -> pd.DataFrame:
    """FRAME with exactly COLUMNS, in order, each of its declared type."""
    return pd.DataFrame({column: frame[column].astype(dtype) for column, dtype in columns.items()})


def empty(name: str) -> pd.DataFrame:
    """Table NAME with no rows."""
    return pd.DataFrame({column: pd.Series(dtype=dtype) for column, dtype in TABLES[name].items()})
