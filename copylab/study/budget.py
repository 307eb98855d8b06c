"""One measurement budget for the whole report, spent where the study's answers are still open.

./inv report runs a first pass of every sweep it reports, then gives the time left to the deciding comparisons
(copylab.measure.planning.allocation) that are still undecided, across sweeps: every undecided point of every sweep is
ranked by the same priority (the blocks it still needs to come out significant, halved beside a change of sign), and the
time goes, cycle by cycle, to rounds of a block at every point, best-ranked first, as far as the cycle's part of
the time goes.  Each sweep then goes on (resumed, its budget grown by its share) and spends its share with its own
allocator, which picks the same points.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from copylab.measure.planning import allocation, budgeted
from copylab.measure.sweep import DEFAULT_OVERHEAD_S
from copylab.record.store import SweepStore

# At most this many cycles of extra blocks: each resumes its sweeps, which costs a testbed's start-up.
MAX_CYCLES = 3
# A sweep's share below this is not worth its start-up.
LEAST_SHARE_S = 4.0
# What a point is open for, in the order the time goes to them: a verdict the study's answers quote still undecided
# (Experiment.verdicts_from), a mean of the study's still imprecise, anything else (another experiment's, or a
# verdict no answer quotes).  The study's six questions are the main experiment's.
UNDECIDED, IMPRECISE, ELSEWHERE = 0, 1, 2


@dataclass(frozen=True)
class Open:
    """A sweep's open points: what each is open for and its priority there (lower first), and what one block at
    each costs."""

    store: SweepStore
    ranks: tuple[tuple[int, float], ...]
    costs_s: tuple[float, ...]  # one block at each point, in the order of ranks

    @property
    def points(self) -> int:
        return len(self.ranks)


def trial_s(store: SweepStore, rows: pd.DataFrame) -> float:
    """What one more trial of the sweep is expected to take: its median trial's wall time."""
    if len(rows) and "trial_wall_s" in rows:
        return float(rows["trial_wall_s"].median())
    config = store.read_manifest().parameters
    return config.warmup_s + config.duration_s + DEFAULT_OVERHEAD_S


def still_open(store: SweepStore) -> Open | None:
    """The sweep's deciding comparisons still undecided and its means still imprecise, or None when there are none."""
    config = store.read_manifest().parameters
    if config.design != "blocked":
        return None
    rows = store.recorded_trials()
    ok = rows[rows["status"] == "ok"]
    experiment = config.declared
    quoted = experiment.main and config.profile in experiment.verdicts_from
    wanted = [
        ((UNDECIDED if quoted else ELSEWHERE, priority), len(contenders))
        for priority, contenders in allocation.prioritized(ok, config).values()
    ]
    # imprecise_blocks' share of the interval past its target, nearest first (after the undecided points elsewhere)
    wanted += [
        ((IMPRECISE if experiment.main else ELSEWHERE, 1.0 + min(share, 1.0)), len(block))
        for share, _, block in budgeted.imprecise_blocks(config, rows)
    ]
    if not wanted:
        return None
    each = trial_s(store, rows)
    return Open(store, tuple(rank for rank, _ in wanted), tuple(count * each for _, count in wanted))


def shares(found: list[Open], seconds: float) -> dict[SweepStore, float]:
    """How much of SECONDS each sweep gets this cycle: rounds of a block at each point open for the first reason
    (UNDECIDED, then IMPRECISE, then ELSEWHERE), best-ranked first across sweeps, as far as SECONDS go, then the
    next reason's.  While a sweep's share comes out too small to be worth its start-up, the worst-ranked such sweep
    is left out and the shares are made again, so that little time goes whole to the best-ranked sweeps instead of
    in crumbs to all.  A sweep that needs less than its share hands the rest back (copylab.study.pipeline.more_time)."""
    given = _rounds(found, seconds)
    short = [item for item in found if given.get(item.store, 0.0) < LEAST_SHARE_S]
    if not short:
        return given
    worst = max(short, key=lambda item: min(item.ranks))
    return shares([item for item in found if item is not worst], seconds)


def _rounds(found: list[Open], seconds: float) -> dict[SweepStore, float]:
    """Rounds of a block at each point of FOUND open for one reason, best-ranked first, as far as SECONDS go; the
    next reason's points when a block at none of them fits any more."""
    ranked = sorted(
        (rank, index, cost)
        for index, item in enumerate(found)
        for rank, cost in zip(item.ranks, item.costs_s, strict=True)
    )
    given: dict[SweepStore, float] = {}
    left = seconds
    for reason in sorted({rank[0] for rank, _, _ in ranked}):
        points = [(found[index].store, cost) for rank, index, cost in ranked if rank[0] == reason]
        while left >= min(cost for _, cost in points):
            for store, cost in points:
                if cost <= left:
                    given[store] = given.get(store, 0.0) + cost
                    left -= cost
    return given
