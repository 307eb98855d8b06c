"""The blocked design's paired analysis on synthetic blocks with a known effect, and its schedules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copylab.analysis.crossover import find_crossovers
from copylab.analysis.stats import compare, paired_ratios
from copylab.declarations import config
from copylab.declarations.implementations import get
from copylab.declarations.metrics import add_metrics
from copylab.declarations.schema import COLUMN_NAMES
from copylab.measure.planning import allocation, budgeted, schedule

PAIR = [("one_copy", "two_copy")]


def blocks(effect: float, n_blocks: int, sizes: list[int], seed: int, noise: float = 0.03) -> pd.DataFrame:
    """Trials of two contenders in N_BLOCKS blocks per size: every block multiplies both by its own factor,
    drawn log-uniformly over a factor of 2 (the spread between identical trials on these hosts), and each trial
    has NOISE of its own; the challenger is EFFECT times the baseline."""
    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        for block in range(1, n_blocks + 1):
            factor = 2 ** rng.uniform(-0.5, 0.5)
            for name, scale in (("two_copy", 1.0), ("one_copy", effect)):
                rows.append(
                    {
                        "experiment": "copies",
                        "implementation": name,
                        "workload": "stream",
                        "size_bytes": size,
                        "threads": 1,
                        "connections": 1,
                        "pinning": "same_cpu",
                        "receive": "copy",
                        "layout": "fields",
                        "idle_connections": 0,
                        "offered_rate": 0,
                        "repetition": block,
                        "status": "ok",
                        "throughput_gbps": 10.0 * factor * scale * rng.lognormal(0, noise),
                    }
                )
    return pd.DataFrame(rows)


def test_a_15_percent_effect_under_2x_block_noise_is_detected_paired_not_unpaired():
    trials = blocks(1.15, 6, [4096], seed=1)
    paired = compare(trials, PAIR, ["throughput_gbps"], paired=True).iloc[0]
    unpaired = compare(trials, PAIR, ["throughput_gbps"], paired=False).iloc[0]
    assert paired["method"] == "paired" and paired["n_pairs"] == 6
    assert paired["significant"] and paired["challenger_better"]
    assert paired["ratio_ci_low"] < 1.15 < paired["ratio_ci_high"] and paired["ratio_ci_low"] > 1
    # the same trials compared as if unpaired: the block noise swamps the effect
    assert unpaired["method"] == "unpaired" and not unpaired["significant"]


def test_no_effect_gives_a_verdict_at_the_nominal_rate_only():
    """400 independent points without an effect: the paired test says 'significant' at about 5% of them."""
    trials = blocks(1.0, 6, [1 << k for k in range(400)], seed=2)
    p = paired_ratios(trials, PAIR, ["throughput_gbps"])["p_value"].to_numpy()
    assert len(p) == 400
    assert 0.025 <= float((p < 0.05).mean()) <= 0.085


def test_the_interval_covers_the_effect_at_its_nominal_rate():
    trials = blocks(1.15, 5, [1 << k for k in range(300)], seed=3)
    found = paired_ratios(trials, PAIR, ["throughput_gbps"])
    covered = ((found["ratio_ci_low"] <= 1.15) & (found["ratio_ci_high"] >= 1.15)).mean()
    assert 0.91 <= covered <= 0.985


def test_a_zero_in_a_block_leaves_that_point_unpaired():
    trials = blocks(1.15, 4, [4096], seed=4)
    trials.loc[0, "throughput_gbps"] = 0.0
    row = compare(trials, PAIR, ["throughput_gbps"], paired=True).iloc[0]
    assert row["method"] == "unpaired" and pd.isna(row["n_pairs"])


def test_a_paired_crossover_is_found_inside_its_bracket_with_an_interval():
    """The challenger loses below 16 KiB and wins above: the crossover lies in the bracket, bootstrapped over
    blocks."""
    sizes = [1024, 4096, 16384, 65536, 262144]
    effects = [0.7, 0.8, 1.0, 1.25, 1.4]
    frames = [blocks(effect, 6, [size], seed=i) for i, (size, effect) in enumerate(zip(sizes, effects, strict=True))]
    measured = add_metrics(_complete(pd.concat(frames, ignore_index=True)))
    comparisons = compare(measured, PAIR, ["throughput_gbps"], paired=True)
    crossovers = find_crossovers(measured, comparisons, PAIR, ["throughput_gbps"], n_resamples=500, seed=1)
    row = crossovers.iloc[0]
    assert row["status"] == "crossover"
    assert 4096 <= row["ci_low"] <= row["crossover_at"] <= row["ci_high"] <= 65536


def _complete(trials: pd.DataFrame) -> pd.DataFrame:
    """TRIALS with every trials.csv column (the ones not set here empty)."""
    return trials.reindex(columns=list(dict.fromkeys([*trials.columns, *COLUMN_NAMES])))


def tiny(**changes) -> config.SweepConfig:
    settings = dict(
        implementations=["two_copy", "one_copy", "zero_copy", "uring_send"],
        workloads=["stream"],
        sizes=[1024, 65536],
        threads=[1, 2],
        trials=2,
        receive=["copy"],
        namespaces=["clpa_s", "clpa_c"],
    )
    settings.update(changes)
    return config.make_config("paired", "quick", **settings)


def test_a_blocked_plan_runs_every_contender_of_a_point_back_to_back():
    settings = tiny()
    specs = schedule.plan(settings)
    assert [spec.order_index for spec in specs] == list(range(len(specs)))
    contenders = {(c.implementation, c.receive) for c in schedule.configurations(settings)}
    for start in range(0, len(specs), len(contenders)):
        block = specs[start : start + len(contenders)]
        assert {(s.implementation.name, s.receive) for s in block} == contenders
        assert len({(s.size_bytes, s.threads, s.repetition) for s in block}) == 1
        assert sorted(s.block_position for s in block) == list(range(len(contenders)))
    assert schedule.plan(settings) == specs, "seeded"
    assert {s.repetition for s in specs} == {1, 2}


def test_the_randomized_design_keeps_its_own_order():
    settings = tiny(design="randomized")
    specs = schedule.plan(settings)
    assert all(spec.block_position is None for spec in specs)
    assert len(specs) == len(schedule.configurations(settings)) * 2


def _rows(specs: list) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "trial_id": s.trial_id,
                "implementation": s.implementation.name,
                "workload": s.workload,
                "size_bytes": s.size_bytes,
                "threads": s.threads,
                "connections": s.connections,
                "pinning": s.pinning,
                "receive": s.receive,
                "layout": s.layout,
                "idle_connections": s.idle_connections,
                "offered_rate": s.offered_rate,
                "repetition": s.repetition,
                "status": "ok",
                "trial_wall_s": 0.4,
            }
            for s in specs
        ]
    )


# Per implementation, a trial's throughput; uring_send's at 64 KiB and one thread swings by +-30% between blocks.
LEVELS = {"two_copy": 10.0, "one_copy": 9.0, "zero_copy": 6.0, "uring_send": 8.0}


def _measured(specs: list) -> pd.DataFrame:
    rows = _rows(specs)
    noisy = ("uring_send", 65536, 1)
    swing = [0.3 if (s.implementation.name, s.size_bytes, s.threads) == noisy else 0.005 for s in specs]
    sign = [1 if s.repetition % 2 else -1 for s in specs]
    rows["throughput_gbps"] = [
        LEVELS[s.implementation.name] * (1 + w * g) for s, w, g in zip(specs, swing, sign, strict=True)
    ]
    return rows


def _budgeted(settings: config.SweepConfig, still: dict) -> pd.DataFrame:
    ran: list = []

    def progress() -> budgeted.Progress:
        return budgeted.Progress(_measured(ran), 0.4 * len(ran), 0.4)

    for batch in budgeted.budgeted_rounds(settings, progress, lambda ok: still):
        ran += batch
    ids = [spec.trial_id for spec in ran]
    assert len(ids) == len(set(ids)), "every trial once"
    assert 0.4 * len(ran) <= settings.budget_s + 0.4 * 8, "within the budget but for the last block"
    return _measured(ran)


def test_a_budget_goes_to_the_undecided_then_the_imprecise_then_whole_points_of_the_others():
    settings = tiny(trials=3, budget_s=40.0, max_trials=5)
    point = schedule.Point("stream", 65536, 1, 1, 0, 0, "same_cpu")
    rows = _budgeted(
        settings, {point: {schedule.study_contender(get("one_copy")), schedule.study_contender(get("two_copy"))}}
    )
    counts = rows.groupby(["implementation", "size_bytes", "threads"]).size()
    # the first pass: every contender at the first thread count, the deciding ones at every point
    assert counts["uring_send", 1024, 1] == 3 and counts["zero_copy", 1024, 2] == 3
    # the undecided point, up to max_trials, with only the contenders its comparison needs
    assert counts["one_copy", 65536, 1] == 5 and counts["one_copy", 1024, 1] == 3
    assert counts["zero_copy", 65536, 1] == 3
    # the imprecise configuration, up to max_trials, paired with its baseline in every block
    assert counts["uring_send", 65536, 1] == 5
    blocks = rows[rows["size_bytes"].eq(65536) & rows["threads"].eq(1)].groupby("repetition")["implementation"]
    assert all("two_copy" in set(names) for _, names in blocks if "uring_send" in set(names))
    # the others elsewhere: whole points of `trials` blocks, with their baseline
    assert counts["uring_send", 1024, 2] == 3 and counts["uring_send", 65536, 2] == 3
    assert counts["two_copy", 1024, 2] >= 3


def test_a_budget_spent_by_the_first_pass_leaves_the_others_elsewhere_unmeasured_not_half_measured():
    settings = tiny(trials=3, budget_s=17.0, max_trials=5)
    rows = _budgeted(settings, {})
    at_two = rows[rows["threads"] == 2]
    assert set(at_two["implementation"]) == {"two_copy", "one_copy", "zero_copy"}
    assert (at_two.groupby(["implementation", "size_bytes"]).size() == 3).all()


def test_a_decided_curve_wants_no_blocks_and_an_open_one_wants_them_where_its_band_is_widest():
    settings = tiny(implementations=["two_copy", "one_copy"], threads=[1], sizes=[1024, 4096, 65536])
    decided = _complete(blocks(1.5, 5, [1024, 4096, 65536], seed=6))
    assert allocation.undecided(decided, settings) == {}
    open_ = _complete(blocks(1.0, 3, [1024, 4096, 65536], seed=7))
    wanted = allocation.undecided(open_, settings)
    assert wanted and all(point.size_bytes in (1024, 4096, 65536) for point in wanted)
    assert set(next(iter(wanted.values()))) == {("one_copy", "copy", "fields"), ("two_copy", "copy", "fields")}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"target_ci": 0.05}, "target-ci: adaptive repetition is for --design randomized"),
        ({"design": "randomized", "budget_s": 10.0}, "budget: only a blocked sweep"),
        ({"budget_s": -1.0}, r"budget: -1.0 is out of range \(0 to"),
        ({"design": "latin"}, "design: unknown 'latin'"),
    ],
)
def test_bad_designs_are_refused_in_one_line(changes, message):
    from copylab.errors import CopylabError

    with pytest.raises(CopylabError, match=message):
        tiny(**changes)
