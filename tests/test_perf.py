"""perf stat output: counted, missing with perf's reason, or counted in user mode only (then missing too)."""

from __future__ import annotations

import math

from copylab.programs import perf

USER_MODE = """<not supported>,,cycles:u,0,100.00,,
0,,context-switches:u,6808167,100.00,0.000,/sec
6.81,msec,task-clock:u,6808167,100.00,0.794,CPUs utilized
"""
ROOT = """2,,context-switches,6622831,100.00,301.986,/sec
6.62,msec,task-clock,6622831,100.00,0.746,CPUs utilized
"""


def test_counts_demoted_to_user_mode_are_missing_never_zero():
    values = perf.parse_output(USER_MODE)
    assert values["cycles"][1] == "<not supported>" and math.isnan(values["cycles"][0])
    assert math.isnan(values["context-switches"][0]) and values["context-switches"][1] == perf.USER_MODE_ONLY
    assert values["task-clock"] == (6.81, ""), "a clock counts the whole CPU time whatever the mode"


def test_counts_of_a_privileged_run_are_kept():
    assert perf.parse_output(ROOT) == {"context-switches": (2.0, ""), "task-clock": (6.62, "")}
