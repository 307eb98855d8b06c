"""A budgeted blocked sweep's rounds: a first pass, then blocks where the deciding comparisons are still undecided,
then where a mean is still imprecise, then the other contenders elsewhere, while the budget lasts.

Every round is decided from the rows recorded so far (Progress), so an interrupted sweep resumes where it was.  Its
blocks are ordered as every blocked design orders them (copylab.measure.planning.schedule.round_of).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pandas as pd

from copylab.analysis.stats import IMPRECISE
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure.planning.schedule import (
    Configuration,
    Contender,
    Point,
    at_point,
    by_point,
    configurations,
    contender_of,
    deciding_contenders,
    imprecision,
    measured,
    partners,
    point_of,
    round_of,
    spec_of,
)
from copylab.measure.running.spec import TrialSpec


@dataclass
class Progress:
    """What a budgeted schedule decides from: the rows recorded so far and the time the trials took."""

    rows: pd.DataFrame  # every recorded row, ok or failed
    spent_s: float
    trial_s: float  # what one more trial is expected to take (window + the harness's median time)


def _next_numbers(rows: pd.DataFrame) -> dict[Point, int]:
    """Per point, the number its next block gets."""
    if not len(rows):
        return {}
    highest = rows.groupby(list(Point._fields))["repetition"].max()
    return {Point(*key): int(number) + 1 for key, number in highest.items()}


def _ok_ids(rows: pd.DataFrame) -> set[str]:
    return set(rows.loc[rows["status"] == "ok", "trial_id"]) if len(rows) else set()


def _done(rows: pd.DataFrame) -> dict[Configuration, int]:
    """Per configuration, how many of its trials were recorded ok."""
    if not len(rows):
        return {}
    counts = rows[rows["status"] == "ok"].groupby(list(Configuration._fields)).size()
    return {Configuration(*key): int(count) for key, count in counts.items()}


def _affordable(
    blocks: list[tuple[Point, int, list[Configuration]]], seconds: float, trial_s: float
) -> list[tuple[Point, int, list[Configuration]]]:
    """The leading BLOCKS whose trials fit in SECONDS."""
    kept, cost = [], 0.0
    for block in blocks:
        cost += len(block[2]) * trial_s
        if cost > seconds:
            break
        kept.append(block)
    return kept


def _with_partners(
    config: SweepConfig, chosen: list[Configuration], everyone: list[Configuration]
) -> list[Configuration]:
    """CHOSEN with what they are compared with, from EVERYONE at their point, in EVERYONE's order."""
    wanted = {contender_of(c) for c in chosen}
    wanted |= {partner for c in chosen for partner in partners(config, contender_of(c))}
    return [c for c in everyone if contender_of(c) in wanted]


def budgeted_rounds(
    config: SweepConfig,
    progress: Callable[[], Progress],
    undecided: Callable[[pd.DataFrame], dict[Point, set[Contender]]],
    skip: frozenset[str] = frozenset(),
) -> Iterator[list[TrialSpec]]:
    """The rounds of a budgeted blocked sweep, each decided from PROGRESS as it stands.

    1. A first pass of `trials` blocks: the deciding contenders at every point, and every contender at the first
       thread count, in the same blocks (the other contenders' curves along the axis, paired with their
       partners at no extra cost).
    2. While the budget lasts, a block at every point where a deciding comparison is still undecided (UNDECIDED,
       copylab.measure.planning.allocation's, passed in so that this module runs nothing), up to max_trials blocks.
    3. Then a block, with its partners, for every configuration whose mean is still imprecise (the report's
       unstable rule, copylab.analysis.stats), nearest to precise first, up to max_trials blocks.
    4. Then the other contenders at the other thread counts, with their partners: whole points of `trials`
       blocks, so that every configuration measured has an interval, fewest threads first.
    """
    assert config.budget_s is not None
    points = by_point(configurations(config, skip))
    first = first_pass_configurations(config, points)
    yield from _first_pass(config, progress, first)
    yield from _undecided_rounds(config, progress, undecided, first)
    yield from _imprecise_rounds(config, progress, skip)
    yield from _other_contenders_rounds(config, progress, points, first)


def _budget_left(config: SweepConfig, now: Progress) -> float:
    assert config.budget_s is not None
    return config.budget_s - now.spent_s


def first_pass_configurations(
    config: SweepConfig, points: dict[Point, list[Configuration]]
) -> dict[Point, list[Configuration]]:
    """Per point, what the first pass runs: the deciding contenders, and every contender at the first thread count;
    in a sweep that holds no deciding contender (question 3's threads sweep: two_copy alone), there is no answer to
    favour, and the first pass is the whole grid."""
    deciding = deciding_contenders(config)
    if not deciding & {contender_of(c) for cs in points.values() for c in cs}:
        return points
    lowest = min(config.threads)
    return {
        point: kept
        for point, cs in points.items()
        if (kept := [c for c in cs if contender_of(c) in deciding or point.threads == lowest])
    }


def _first_pass(
    config: SweepConfig, progress: Callable[[], Progress], first: dict[Point, list[Configuration]]
) -> Iterator[list[TrialSpec]]:
    """Phase 1: `trials` rounds of FIRST, leaving out the trials already recorded ok (a resumed sweep)."""
    for number in range(1, config.trials + 1):
        ok = _ok_ids(progress().rows)
        blocks = [
            (p, number, [c for c in cs if spec_of(config, c, number, 0).trial_id not in ok]) for p, cs in first.items()
        ]
        specs = round_of(config, [block for block in blocks if block[2]], number)
        if specs:
            yield specs


def _undecided_rounds(
    config: SweepConfig,
    progress: Callable[[], Progress],
    undecided: Callable[[pd.DataFrame], dict[Point, set[Contender]]],
    first: dict[Point, list[Configuration]],
) -> Iterator[list[TrialSpec]]:
    """Phase 2: a block at every point whose deciding comparison is still UNDECIDED, while the budget lasts; a point
    UNDECIDED names off the grid gets the contenders it names there."""
    for round_number in range(1, config.max_trials + 1):
        now = progress()
        counts, numbers = _done(now.rows), _next_numbers(now.rows)
        blocks = []
        for point, contenders in undecided(now.rows[now.rows["status"] == "ok"]).items():
            # a point off the grid is one the allocator adds (a size inside a crossover's bracket)
            chosen = [c for c in first[point] if contender_of(c) in contenders] if point in first else None
            chosen = at_point(point, contenders) if chosen is None else chosen
            if chosen and all(counts.get(c, 0) < config.max_trials for c in chosen):
                blocks.append((point, numbers.get(point, 1), chosen))
        blocks = _affordable(blocks, _budget_left(config, now), now.trial_s)
        if not blocks:
            break
        yield round_of(config, blocks, ("undecided", round_number))


def imprecise_blocks(
    config: SweepConfig, rows: pd.DataFrame, skip: frozenset[str] = frozenset()
) -> list[tuple[float, Point, list[Configuration]]]:
    """(imprecision, point, its block) of every point with a configuration whose mean is still imprecise (the report's
    unstable rule) and short of max_trials, nearest to precise first: the block holds those configurations with what
    they are compared with."""
    points = by_point(configurations(config, skip))
    counts = _done(rows)
    found = measured(rows[rows["status"] == "ok"])
    nearest: dict[Point, float] = {}
    for c, values in found.items():
        share = imprecision(values)
        if share > IMPRECISE and counts.get(c, 0) < config.max_trials and point_of(c) in points:
            nearest[point_of(c)] = min(share, nearest.get(point_of(c), math.inf))
    blocks = []
    for point in sorted(nearest, key=nearest.__getitem__):
        cs = [c for c in points[point] if c in found]
        chosen = [c for c in cs if imprecision(found[c]) > IMPRECISE and counts.get(c, 0) < config.max_trials]
        blocks.append((nearest[point], point, _with_partners(config, chosen, cs)))
    return blocks


def _imprecise_rounds(
    config: SweepConfig, progress: Callable[[], Progress], skip: frozenset[str]
) -> Iterator[list[TrialSpec]]:
    """Phase 3: a block, with its partners, for every configuration still imprecise, nearest to precise first."""
    for round_number in range(1, config.max_trials + 1):
        now = progress()
        numbers = _next_numbers(now.rows)
        wanted = [(point, numbers.get(point, 1), block) for _, point, block in imprecise_blocks(config, now.rows, skip)]
        blocks = _affordable(wanted, _budget_left(config, now), now.trial_s)
        if not blocks:
            break
        yield round_of(config, blocks, ("imprecise", round_number))


def _blocks_missing(config: SweepConfig, rows: pd.DataFrame, contenders: list[Configuration]) -> int:
    """How many blocks CONTENDERS still lack of `trials`."""
    done = _done(rows)
    return max(config.trials - done.get(c, 0) for c in contenders)


def _other_contenders_rounds(
    config: SweepConfig,
    progress: Callable[[], Progress],
    points: dict[Point, list[Configuration]],
    first: dict[Point, list[Configuration]],
) -> Iterator[list[TrialSpec]]:
    """Phase 4: the contenders the first pass left out, with their partners, whole points that the budget affords."""
    rest = {}  # point -> (its contenders left out, those with their partners)
    for point, cs in points.items():
        theirs = [c for c in cs if c not in first.get(point, [])]
        if theirs:
            rest[point] = (theirs, _with_partners(config, theirs, cs))
    now = progress()
    needed = {point: _blocks_missing(config, now.rows, rest[point][0]) * len(cs) for point, (_, cs) in rest.items()}
    # The points are chosen once, so that each one chosen is run to a whole `trials` blocks.
    chosen = _affordable_points(needed, _budget_left(config, now), now.trial_s)
    for number in range(1, config.trials + 1):
        now = progress()
        numbers = _next_numbers(now.rows)
        blocks = [
            (point, numbers.get(point, 1), rest[point][1])
            for point in chosen
            if _blocks_missing(config, now.rows, rest[point][0]) > config.trials - number
        ]
        specs = round_of(config, blocks, ("others", number))
        if specs:
            yield specs


def _affordable_points(trials: dict[Point, int], seconds: float, trial_s: float) -> list[Point]:
    """The points, fewest threads first, whose TRIALS (how many each needs) fit in SECONDS."""
    kept, cost = [], 0.0
    for point in sorted(trials, key=lambda p: (p.threads, p.size_bytes)):
        cost += trials[point] * trial_s
        if cost > seconds:
            break
        kept.append(point)
    return kept
