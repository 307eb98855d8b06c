"""Where a budgeted sweep's next blocks go: the points of the deciding comparisons that are still undecided.

A deciding comparison is one of the experiment's deciding pairs (copylab.declarations.implementations.Experiment) on its
metric and workload, receiving by copy, along the experiment's axis, with the analysis's own paired statistics
(copylab.analysis.stats, copylab.analysis.crossover).  A curve is decided when its verdict is decisive (a crossover,
or better or never better wherever the two differ) and a redraw of its blocks gives it again at least SETTLED of the
time, the report's own rule for "settled".  A decisive verdict not yet settled gets blocks at the points behind most
of the redraws that change it.  Otherwise a curve's undecided points (and points not compared yet) get a block each,
those needing the fewest more blocks to come out significant first, where the estimate changes sign beside a
significant point (that is where a crossover would be placed) at half their count; a curve significant everywhere
that still crosses more than once gets blocks at its weakest significant points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from copylab.analysis.crossover import SETTLED, blocks_to_decide, classify, curve_advantages, redraws
from copylab.analysis.stats import compare
from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure.planning.schedule import Contender, Point, configurations, point_of, study_contender
from copylab.record.tables import curve_keys


def _labels(group: pd.DataFrame) -> list[str]:
    return [
        ("B" if better else "W") if significant else "0"
        for better, significant in zip(group["challenger_better"], group["significant"], strict=True)
    ]


# The undecided points of one curve that get a block in one round: the most promising.
MOST_PER_CURVE = 2
# A point's priority is (more blocks it needs) / (that + HALF_PRIORITY_BLOCKS): a point this many blocks from
# significance ranks halfway between one that needs none and one that never gets there.
HALF_PRIORITY_BLOCKS = 4.0


def _priority(values: np.ndarray, tests: int, beside_change: bool) -> float:
    """How far a point is from significance, from 0 (a block or two away) to 1 (out of reach): the blocks its paired
    test still needs (copylab.analysis.crossover.blocks_to_decide), halved beside a change of sign, where a crossover
    would be placed.  Counting blocks, not closeness, sends none to a point whose spread no block will tame."""
    more = blocks_to_decide(values, tests) - len(values) if len(values) else np.inf
    priority = 1.0 if not np.isfinite(more) else more / (more + HALF_PRIORITY_BLOCKS)
    return priority / 2 if beside_change else priority


def _targets(
    group: pd.DataFrame, axis: str, advantages: list[np.ndarray], most_blocks: int | None = None
) -> list[tuple[float, int]]:
    """(priority, point on the axis) of a curve's points that still need blocks, leaving out those that have
    MOST_BLOCKS already; lower priority first.  GROUP is sorted along AXIS; ADVANTAGES[i] holds the log ratios of
    the blocks of its i-th point."""
    labels = _labels(group)
    if "0" not in labels:
        return []
    status = classify(labels)
    points = group[axis].to_numpy()
    if status == "crossover":
        low = max(i for i, label in enumerate(labels) if label == "W")
        high = min(i for i, label in enumerate(labels) if label == "B")
        candidates = [i for i in range(low + 1, high) if labels[i] == "0"]
    else:
        candidates = [i for i, label in enumerate(labels) if label == "0"]
    sign = np.sign(np.log(group["ratio"].to_numpy(dtype=float)))
    # A change of sign next to a significant point is where a crossover would be placed; between two undecided
    # points it is noise around no difference (servers at one connection).
    crossings = [
        i for i in range(len(sign) - 1) if sign[i] != sign[i + 1] and (labels[i] != "0" or labels[i + 1] != "0")
    ]
    changes = {j for i in crossings for j in (i, i + 1)}
    ranked = sorted(
        (_priority(advantages[i], len(group), i in changes), int(points[i]))
        for i in candidates
        if most_blocks is None or len(advantages[i]) < most_blocks  # a point at its cap gets no more: the next does
    )
    # A few points at a time: blocks spread over every undecided size would lift none of them to significance.
    return ranked[:MOST_PER_CURVE]


# Verdicts that answer a question: a crossover, or one option better (or never better) wherever they differ.
DECISIVE = ("crossover", "challenger_always_better", "challenger_never_better")


def _paired(group: pd.DataFrame) -> bool:
    return bool((group["method"] == "paired").all())


def _open_points(
    group: pd.DataFrame, axis: str, advantages: list[np.ndarray], seed: int, most_blocks: int
) -> list[tuple[float, int]]:
    """(priority, point) where a curve still needs blocks; none once its verdict is settled: decisive and given again
    by at least SETTLED of the redraws of its blocks (the report's own rule, drawn with the sweep's seed as the report
    draws them), or, where its trials are not paired, decisive with no point left undecided that could move it.  A
    decisive verdict not yet settled gets blocks where its redraws move it; any other, at its undecided points."""
    status = classify(_labels(group))
    if status in DECISIVE and _paired(group):
        drawn = redraws(advantages, seed=seed)
        return [] if drawn.stability >= SETTLED else _movers(group, axis, advantages, drawn.movers, most_blocks)
    if status in DECISIVE and not _targets(group, axis, advantages):
        return []
    return _targets(group, axis, advantages, most_blocks) or _weakest(group, axis, most_blocks)


def _movers(
    group: pd.DataFrame, axis: str, advantages: list[np.ndarray], movers: np.ndarray, most_blocks: int
) -> list[tuple[float, int]]:
    """(priority, point) of a decisive but unsettled curve's points behind most of the redraws that change its
    verdict (MOVERS, copylab.analysis.crossover.Redraws), short of MOST_BLOCKS: there more blocks steady the verdict
    most, wherever the point lies (a point outside a crossover's bracket whose few blocks redraw as significant
    moves it as much as one inside)."""
    ranked = sorted(
        (1.0 - float(share), int(point))
        for share, point, values in zip(movers, group[axis], advantages, strict=True)
        if share > 0 and len(values) < most_blocks
    )
    return ranked[:MOST_PER_CURVE]


def _weakest(group: pd.DataFrame, axis: str, most_blocks: int) -> list[tuple[float, int]]:
    """(priority, point) of a curve's significant points short of MOST_BLOCKS, the weakest first: where a curve
    significant everywhere but with no decisive verdict (it crosses more than once) may yet become one."""
    open_ = group["n_pairs"] < most_blocks if "n_pairs" in group else True
    weakest = group[group["significant"].astype(bool) & open_].sort_values("p_holm", ascending=False)
    return [(0.5 + 0.4 * index / len(weakest), int(point)) for index, point in enumerate(weakest[axis])]


def undecided(ok_rows: pd.DataFrame, config: SweepConfig, confidence: float = 0.95) -> dict[Point, set[Contender]]:
    """Per point, the contenders whose deciding comparisons still need blocks there, the most promising points
    first."""
    return {point: contenders for point, (_, contenders) in prioritized(ok_rows, config, confidence).items()}


def prioritized(
    ok_rows: pd.DataFrame, config: SweepConfig, confidence: float = 0.95
) -> dict[Point, tuple[float, set[Contender]]]:
    """undecided's points with their priority (lower first: -1 not compared yet, then from 0, a block or two from
    what the point is open for, to 1, out of reach), so that the points of several sweeps can be ranked together."""
    experiment = implementations.experiment(config.experiment)
    pairs = [
        (challenger, baseline)
        for challenger, baseline in implementations.deciding_pairs(experiment)
        if {challenger, baseline} <= set(config.implementations)
    ]
    grid = [point_of(c) for c in configurations(config) if c.workload == experiment.workload]
    wanted: dict[Point, tuple[float, set[Contender]]] = {}

    def want(point: Point, priority: float, challenger: str, baseline: str) -> None:
        best, contenders = wanted.get(point, (priority, set()))
        wanted[point] = (min(best, priority), contenders | {study_contender(challenger), study_contender(baseline)})

    comparisons = (
        compare(add_metrics(ok_rows), pairs, [experiment.metric], confidence, experiment.axis, paired=True)
        if len(ok_rows)
        else pd.DataFrame(columns=["workload", "challenger", "baseline"])
    )
    comparisons = comparisons[comparisons["workload"] == experiment.workload]
    keys_of = curve_keys(experiment.axis)
    for challenger, baseline in pairs:
        mine = comparisons[(comparisons["challenger"] == challenger) & (comparisons["baseline"] == baseline)]
        compared = {point_of_row(row) for _, row in mine.iterrows()}
        for point in dict.fromkeys(grid):
            if point not in compared:
                want(point, -1.0, challenger, baseline)  # not compared yet: first
        for keys, group in mine.groupby(keys_of):
            group = group.sort_values(experiment.axis)
            curve = add_metrics(ok_rows.loc[(ok_rows[keys_of] == list(keys)).all(axis=1)])
            advantages = curve_advantages(
                curve, challenger, baseline, experiment.metric, experiment.axis, group[experiment.axis]
            )
            for priority, position in _open_points(group, experiment.axis, advantages, config.seed, config.max_trials):
                row = group[group[experiment.axis] == position].iloc[0]
                want(point_of_row(row), priority, challenger, baseline)
    return dict(sorted(wanted.items(), key=lambda item: item[1][0]))


def point_of_row(row: pd.Series) -> Point:
    return Point(
        row["workload"],
        int(row["size_bytes"]),
        int(row["threads"]),
        int(row["connections"]),
        int(row["idle_connections"]),
        int(row["offered_rate"]),
        row["pinning"],
    )
