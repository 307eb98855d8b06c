"""Error rates measured, not assumed: copylab's own verdicts and allocator, first pass and extra rounds as a budgeted
report runs them, on synthetic curves with a known truth (tests/error_rates.py).  docs/method.md gives the same
simulation with more runs (`.venv/bin/python -m tests.error_rates 1000`)."""

from __future__ import annotations

import pytest

from tests.error_rates import (
    NULL_SCENARIOS,
    POWER_SCENARIO,
    REPORT_BUDGETED,
    REPORT_LEAST,
    THREAD_SCENARIOS,
    Rates,
    crossover_found,
    decided_rate,
    simulate,
)

# Enough runs that a false-verdict rate of 5% would put the interval's upper end well above 5%; small enough for
# about a minute.
NULL_RUNS = 50  # per spread scenario, four scenarios
POWER_RUNS = 60
THREAD_RUNS = 40  # per thread count
# The report's design at its fewest blocks runs no allocator, so a run costs about 2 ms: enough runs that a rate near
# the 5% promise is told from one well under it.
LEAST_RUNS = 250  # per spread scenario


@pytest.mark.simulation
def test_false_verdicts_stay_under_5_percent_power_reaches_80_and_sure_verdicts_come_out_again():
    null = [simulate(scenario, NULL_RUNS, seed) for seed, scenario in enumerate(NULL_SCENARIOS)]
    runs, wrong = sum(r.runs for r in null), sum(r.hits for r in null)
    pooled = type(null[0])("no difference, every spread", runs, wrong, 0, 0, 0.0)
    low, high = pooled.interval()
    assert high <= 0.05, f"false verdicts {wrong}/{runs}, 95% interval {low:.1%}-{high:.1%}: may pass 5%"
    power = simulate(POWER_SCENARIO, POWER_RUNS, 99, crossover_found)
    assert power.rate >= 0.8, f"power {power.hits}/{power.runs} ({power.interval()})"
    assert power.covered >= 0.9 * power.crossovers, f"{power.covered} of {power.crossovers} intervals hold 16 KiB"
    sure = sum(r.sure for r in [*null, power])
    again = sum(r.sure_again for r in [*null, power])
    assert sure >= 10, f"only {sure} sure verdicts: too few to judge their calibration"
    assert again / sure >= 0.9, f"of {sure} sure verdicts, {again} came out the same in a second run"


@pytest.mark.simulation
def test_the_report_design_at_its_fewest_blocks_keeps_false_verdicts_under_5_percent():
    """./inv report's own grid where the host affords only the first pass's fewest blocks: fewer blocks must make
    verdicts rarer, never wrong ones commoner."""
    null = [
        simulate(scenario, LEAST_RUNS, 10 + seed, design=REPORT_LEAST) for seed, scenario in enumerate(NULL_SCENARIOS)
    ]
    runs, wrong = sum(r.runs for r in null), sum(r.hits for r in null)
    pooled = type(null[0])("no difference, every spread", runs, wrong, 0, 0, 0.0)
    low, high = pooled.interval()
    assert high <= 0.05, f"false verdicts {wrong}/{runs}, 95% interval {low:.1%}-{high:.1%}: may pass 5%"


@pytest.mark.simulation
def test_the_report_design_at_every_thread_count_decides_no_crossing_wrongly():
    """./inv report's grid with its first pass and as many blocks again, at each thread count's spread on a noisy
    host: a curve that crosses is called a crossover or left undecided, never always, never better or equivalent."""
    found = [decided_rate(scenario, THREAD_RUNS, REPORT_BUDGETED, seed) for seed, scenario in THREAD_SCENARIOS.items()]
    runs, wrong = sum(r.runs for r in found), sum(r.wrong for r in found)
    pooled = Rates("crossing, every thread count", runs, wrong, 0, 0, 0.0)
    low, high = pooled.interval()
    assert high <= 0.05, f"wrong verdicts {wrong}/{runs}, 95% interval {low:.1%}-{high:.1%}: may pass 5%"
    assert found[0].decided > 0, "one thread's curve, the least noisy, was never decided"
