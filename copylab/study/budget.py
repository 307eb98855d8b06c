"""One measurement budget for the whole report, spent where the study's answers are still open.

./inv report runs a first pass of every sweep it reports, then gives the time left to the deciding comparisons
(copylab.measure.allocation) that are still undecided, across sweeps: every undecided point of every sweep is ranked
by the same priority (the blocks it still needs to come out significant, halved beside a change of sign), and the
time goes, cycle by cycle, to rounds of a block at every point, best-ranked first, as far as the cycle's part of
the time goes.  Each sweep then goes on (resumed, its budget grown by its share) and spends its share with its own
allocator, which picks the same points.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from copylab.declarations import implementations
from copylab.measure import allocation, schedule
from copylab.measure.sweep import DEFAULT_OVERHEAD_S
from copylab.record.store import SweepStore

# At most this many cycles of extra blocks: each resumes its sweeps, which costs a testbed's start-up.
MAX_CYCLES = 3
# A sweep's share below this is not worth its start-up.
LEAST_SHARE_S = 4.0
# Added to the priorities of an experiment other than the main one: past the study's undecided (-1 to 1) and
# imprecise (1 to 2) points.
AFTER_THE_STUDY = 2.0


@dataclass(frozen=True)
class Open:
    """A sweep's undecided points: their priorities and what one block at each costs."""

    store: SweepStore
    priorities: tuple[float, ...]
    costs_s: tuple[float, ...]  # one block at each point, in the order of priorities

    @property
    def points(self) -> int:
        return len(self.priorities)


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
    undecided = list(allocation.prioritized(ok, config).values())
    # Then the configurations whose means are still imprecise, ranked after every undecided point, nearest first.
    imprecise = [(1.0 + min(share, 1.0), block) for share, _, block in schedule.imprecise_blocks(config, rows)]
    if not undecided and not imprecise:
        return None
    each = trial_s(store, rows)
    wanted = [(priority, len(contenders)) for priority, contenders in undecided]
    wanted += [(priority, len(block)) for priority, block in imprecise]
    if not implementations.experiment(config.experiment).main:
        # The study's six questions are the main experiment's: another experiment's open points wait for all of them.
        wanted = [(priority + AFTER_THE_STUDY, count) for priority, count in wanted]
    return Open(store, tuple(p for p, _ in wanted), tuple(count * each for _, count in wanted))


def shares(found: list[Open], seconds: float) -> dict[SweepStore, float]:
    """How much of SECONDS each sweep gets this cycle: a block at each undecided point, best-ranked first across
    sweeps, then another round of them, as far as SECONDS go; a share too small to be worth a sweep's start-up is
    dropped.  A sweep that needs less than its share hands the rest back (copylab.study.pipeline.more_time)."""
    ranked = sorted(
        (priority, index, cost)
        for index, item in enumerate(found)
        for priority, cost in zip(item.priorities, item.costs_s, strict=True)
    )
    given: dict[int, float] = {}
    left = seconds
    while ranked and left >= min(cost for _, _, cost in ranked):
        for _, index, cost in ranked:
            if cost <= left:
                given[index] = given.get(index, 0.0) + cost
                left -= cost
    return {found[index].store: share for index, share in given.items() if share >= LEAST_SHARE_S}
