"""./inv report's first pass sized from the host (copylab.study.sizing): a noisy and a quiet host get different first
passes, both within half the budget; the pilot's blocks are the first pass's own; the spread it reads is the blocks'."""

from __future__ import annotations

import numpy as np
import pytest

from copylab import experiments
from copylab.analysis.noise import DESIGNED_SPREAD, FEWEST_BLOCKS, block_spread, needed_blocks, pooled
from copylab.declarations.config import make_config
from copylab.measure.planning import schedule
from copylab.measure.planning.budgeted import first_pass_configurations
from copylab.paths import ROOT
from copylab.study import REPORT_BUDGET_S, sizing
from tests.test_paired import PAIR, blocks


def _sweeps(budget_s: float = 0.0) -> tuple[list, list]:
    """The report's sweeps as its first passes make them: those the answers quote, and the others."""
    quoted = experiments.main()
    made = [make_config(f"{p}-t", p, experiment=e.name, budget_s=budget_s) for e, p in experiments.reported()]
    sized = [c for c in made if c.experiment == quoted.name and c.profile in quoted.verdicts_from]
    return sized, [c for c in made if c not in sized]


def _plan(spread: float, trial_s: float, budget_s: float):
    sized, fixed = _sweeps()
    pace = sizing.HostPace(spread, 8, trial_s, 0.3, 2.0)
    return sizing.size_first_pass(pace, sized, fixed, budget_s, 10.0, ("quick-t", 12))


@pytest.mark.parametrize("budget_s", [REPORT_BUDGET_S, 500.0, 900.0])
def test_a_noisy_and_a_quiet_host_both_stay_within_half_the_budget(budget_s):
    quiet, noisy = _plan(0.02, 0.33, budget_s), _plan(0.14, 0.5, budget_s)
    for plan in (quiet, noisy):
        assert plan.share_s == budget_s / 2
        if plan.affordable_blocks >= FEWEST_BLOCKS:  # a host that affords the fewest blocks at all
            assert plan.planned_s <= plan.share_s
        assert plan.blocks >= FEWEST_BLOCKS
    assert noisy.needed_blocks > quiet.needed_blocks


def test_where_both_afford_it_a_noisy_host_gets_a_larger_first_pass():
    quiet, noisy = _plan(0.02, 0.33, 900.0), _plan(0.14, 0.33, 900.0)
    assert quiet.blocks == quiet.needed_blocks < noisy.blocks
    assert noisy.blocks == min(noisy.needed_blocks, noisy.affordable_blocks)
    assert quiet.planned_s < noisy.planned_s <= noisy.share_s


def test_a_slower_host_affords_fewer_blocks():
    fast, slow = _plan(0.14, 0.33, 900.0), _plan(0.14, 0.66, 900.0)
    assert slow.affordable_blocks < fast.affordable_blocks
    assert slow.planned_s <= slow.share_s and fast.planned_s <= fast.share_s


def test_the_blocks_a_spread_asks_for_grow_with_its_square():
    assert needed_blocks(0.01, 7) == FEWEST_BLOCKS
    assert needed_blocks(float("nan"), 7) == FEWEST_BLOCKS
    four_times = needed_blocks(0.2, 7) / needed_blocks(0.1, 7)
    assert 3.5 <= four_times <= 4.5


def test_the_pilot_runs_the_first_blocks_of_the_main_sweep_in_its_order():
    sized, _ = _sweeps()
    main = make_config(sized[0].name, sized[0].profile, budget_s=0.0, trials=3)
    pilot = sizing.pilot_config(main)
    assert pilot.seed == main.seed and pilot.name == main.name
    assert min(pilot.threads) == min(main.threads) and max(pilot.threads) == max(main.threads)
    assert not set(pilot.sizes) & set(main.side_sizes)
    assert any(s < 16384 for s in pilot.sizes) and any(s >= 16384 for s in pilot.sizes)
    first = first_pass_configurations(main, schedule.by_point(schedule.configurations(main)))
    ran = schedule.plan(pilot)
    for spec in ran:
        point = schedule.Point(spec.workload, spec.size_bytes, spec.threads, spec.connections, 0, 0, spec.pinning)
        block = schedule.block_order(main, point, spec.repetition, first[point])
        # the same trial, at the same place in its block, as the first pass would run it
        assert [c.implementation for c in block][spec.block_position] == spec.implementation.name
        assert len(block) == len(schedule.block_order(pilot, point, spec.repetition, first[point]))
    assert len(ran) == sizing.block_trials(pilot) * FEWEST_BLOCKS


def test_block_spread_reads_the_spread_the_blocks_were_drawn_with():
    noise = 0.05  # each trial's own: the log ratio of two spreads sqrt(2) times as much
    trials = blocks(1.1, 6, [1 << k for k in range(10, 18)], seed=5, noise=noise)
    found = block_spread(trials, PAIR, "throughput_gbps", "size_bytes")
    assert len(found) == 1 and found[0].points == 8 and found[0].degrees == 8 * 5
    assert found[0].spread == pytest.approx(noise * np.sqrt(2), rel=0.2)
    spread, degrees = pooled(found)
    assert spread == found[0].spread and degrees == 40


def test_the_designed_spread_is_docs_method_tables():
    """The report sets this run's spread beside what the method was designed for: the table in docs/method.md."""
    row = next(line for line in (ROOT / "docs" / "method.md").read_text().splitlines() if "| 0.2 s, 0.1 s |" in line)
    cells = [cell.strip() for cell in row.strip("| ").split("|")]
    assert (min(float(cells[1]), float(cells[2])), max(float(cells[1]), float(cells[2]))) == DESIGNED_SPREAD


def test_the_report_sets_this_runs_spread_beside_the_designed_one_computed_from_its_blocks():
    import dataclasses

    from copylab.report.sections import spending
    from tests.test_answers import make_sweep

    made = make_sweep()
    quick = dataclasses.replace(made.manifest.parameters, profile="quick")
    base = dataclasses.replace(made, manifest=dataclasses.replace(made.manifest, parameters=quick))
    quiet, noisy = (blocks(1.05, 4, [1 << k for k in range(6, 19, 2)], seed=8, noise=n) for n in (0.01, 0.1))
    texts, rows = [], []
    for trials in (quiet, noisy):
        results = dataclasses.replace(base, trials=trials)
        rows.append(spending.noise_rows(results))
        texts.append(spending.host_noise([results]))
    assert all(len(found) == 1 for found in rows)  # one_copy / two_copy at one thread
    quiet_row, noisy_row = rows[0][0], rows[1][0]
    assert float(noisy_row["spread per block"]) > 5 * float(quiet_row["spread per block"])
    assert int(noisy_row["needs per size"]) > int(quiet_row["needs per size"])
    assert quiet_row["designed needs"] == noisy_row["designed needs"]
    assert float(quiet_row["blocks per size"]) == 4
    assert all("This host's noise" in text and "docs/method.md" in text for text in texts)
    assert noisy_row["spread per block"] in texts[1]


def test_a_slow_host_runs_the_other_sweeps_at_the_fewest_blocks_to_stay_within_the_budget():
    sized, fixed = _sweeps()
    quick = sizing.HostPace(0.02, 8, 0.37, 0.3, 2.0)
    slow = sizing.HostPace(0.02, 8, 0.9, 0.3, 6.0)
    roomy = sizing.size_first_pass(quick, sized, fixed, 400.0, 10.0, ("quick-t", 12))
    tight = sizing.size_first_pass(slow, sized, fixed, 400.0, 10.0, ("quick-t", 12))
    assert roomy.fixed_blocks is None and roomy.planned_s + roomy.fixed_s <= 400.0
    assert tight.fixed_blocks == FEWEST_BLOCKS
    assert tight.fixed_s < sizing.size_first_pass(slow, sized, fixed, 1e4, 10.0, ("quick-t", 12)).fixed_s


def test_a_sweep_without_a_deciding_comparison_runs_its_whole_grid_in_the_first_pass():
    threads = make_config("t", "threads", budget_s=0.0)
    points = schedule.by_point(schedule.configurations(threads))
    first = first_pass_configurations(threads, points)
    assert first == points and {p.threads for p in first} == set(threads.threads)
    main = make_config("q", "quick", budget_s=0.0)
    quick = first_pass_configurations(main, schedule.by_point(schedule.configurations(main)))
    assert {p.threads for p in quick} == set(main.threads)  # the deciding contenders at every thread count
    assert len({c.implementation for p, cs in quick.items() if p.threads > 1 for c in cs}) < len(main.members)
