"""Where a budgeted sweep's next blocks go: where the answers of its deciding comparisons are still open.

A deciding comparison is one of the experiment's deciding pairs (copylab.declarations.implementations.Experiment) on its
metric and workload, receiving by copy, along the experiment's axis.  Each curve is judged as the report judges it,
by the model of its whole curve (copylab.analysis.deciding reads the trials so):

- a verdict that is decided and sure wants no more blocks, except a crossover whose interval is still wide;
- a crossover wants a new point inside its bracket (the geometric midpoint of the measured points on either side, see
  midpoint), so that its interval rests on measurements rather than on the curve between them, and blocks at the
  bracket's ends;
- any other wants blocks where its band is widest for what it must decide.

Priorities run from -1 (a point not compared yet) through 0 (an open curve a few blocks from its verdict) to 1 (far
from it), so that the points of several sweeps can be ranked together (copylab.study.budget).

The schedule gets a dict from Point to the contenders that need a block there.  A Point may hold a size (or
connection count) the sweep's grid does not: the schedule runs it like the grid's point it was split from, with
only that axis value changed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from copylab.analysis.curve_model import Assessment
from copylab.analysis.deciding import Curve, deciding
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure.planning.schedule import Contender, Point, configurations, point_of, study_contender

# The points of one open curve that get a block in one round.
MOST_PER_CURVE = 2
# A curve this many blocks per point from its verdict ranks halfway between one a block away and one out of reach.
HALF_PRIORITY_BLOCKS = 4.0
# A sure crossover's interval still gets blocks, after every open curve, while it spans more than this many doublings.
WIDE_INTERVAL = 1.0
SURE_CROSSOVER_PRIORITY = 0.9
# A bracket narrower than this ratio of its ends gets no new point inside: a quarter of a doubling.
FINEST_BRACKET = 2**0.25


def midpoint(low: float, high: float) -> int | None:
    """A point between LOW and HIGH near their geometric mean, rounded to a multiple of the largest power of two at
    most a quarter of their distance (12 KiB between 8 and 16 KiB, 32 connections between 10 and 100); None when the
    bracket is narrower than FINEST_BRACKET or no such point lies strictly inside it."""
    if high / low < FINEST_BRACKET:
        return None
    step = 2 ** max(0, math.floor(math.log2((high - low) / 4)))
    middle = int(round(math.sqrt(low * high) / step) * step)
    return middle if low < middle < high else None


def wanted_points(curve: Curve, most_blocks: int) -> list[tuple[float, int]]:
    """(priority, point) where CURVE needs blocks next, lower priority first (every point first where no model
    fits it yet).  A point holding MOST_BLOCKS blocks gets no more.  A point may be new."""
    found = curve.found
    if found is None:
        return [(-1.0, int(point)) for point in curve.points]
    fit = found.fit
    blocks = dict(zip(fit.points.astype(int), fit.blocks, strict=True))
    open_ = not found.sure
    if found.status == "crossover":
        wanted = _in_bracket(found)
        if not open_ and _doublings(found) <= WIDE_INTERVAL:
            return []
    elif not open_:
        return []
    else:
        # where the band is widest for what it must decide, then the measured points whose own band is widest
        wanted = [int(found.decide_at), *_most(fit.points, curve.half_band)]
    wanted = [point for point in dict.fromkeys(wanted) if blocks.get(point, 0) < most_blocks][: MOST_PER_CURVE + 1]
    more = found.more_blocks / len(fit.points) if np.isfinite(found.more_blocks) else math.inf
    priority = 1.0 if not math.isfinite(more) else more / (more + HALF_PRIORITY_BLOCKS)
    return [(priority if open_ else SURE_CROSSOVER_PRIORITY, point) for point in wanted]


def _doublings(found: Assessment) -> float:
    _, low, high = found.crossover
    return math.log2(high / low) if low > 0 else math.inf


def _in_bracket(found: Assessment) -> list[int]:
    """A new point inside the crossover's bracket (the measured points on either side of it), then the bracket's
    ends, the nearer to the crossover first."""
    points, at = found.fit.points, found.crossover[0]
    above = int(np.searchsorted(points, at))
    if above == 0 or above == len(points):
        return [int(points[min(above, len(points) - 1)])]
    low, high = int(points[above - 1]), int(points[above])
    ends = sorted((low, high), key=lambda end: abs(math.log2(end / at)))
    new = midpoint(low, high)
    return ([new] if new is not None else []) + ends


def _most(points: np.ndarray, scores: np.ndarray) -> list[int]:
    """The MOST_PER_CURVE POINTS of the highest SCORES, highest first."""
    return [int(points[i]) for i in np.argsort(-scores)[:MOST_PER_CURVE]]


def undecided(ok_rows: pd.DataFrame, config: SweepConfig, confidence: float = 0.95) -> dict[Point, set[Contender]]:
    """Per point, the contenders whose deciding comparisons still need blocks there, the most promising points
    first."""
    return {point: contenders for point, (_, contenders) in prioritized(ok_rows, config, confidence).items()}


def prioritized(
    ok_rows: pd.DataFrame, config: SweepConfig, confidence: float = 0.95
) -> dict[Point, tuple[float, set[Contender]]]:
    """undecided's points with their priority (lower first: -1 not compared yet, then from 0, a block or two from
    a curve's verdict, to 1, out of reach), so that the points of several sweeps can be ranked together."""
    experiment = config.declared
    both = {(c.name, b.name): {study_contender(c), study_contender(b)} for c, b in config.deciding}
    pairs = list(both)
    grid = [point_of(c) for c in configurations(config) if c.workload == experiment.workload]
    wanted: dict[Point, tuple[float, set[Contender]]] = {}

    def want(point: Point, priority: float, challenger: str, baseline: str) -> None:
        best, contenders = wanted.get(point, (priority, set()))
        wanted[point] = (min(best, priority), contenders | both[challenger, baseline])

    for (challenger, baseline), said in deciding(ok_rows, experiment, pairs, confidence, config.seed).items():
        compared = {point_of_row(row) for _, row in said.comparisons.iterrows()}
        for point in dict.fromkeys(grid):
            if point not in compared:
                want(point, -1.0, challenger, baseline)  # not compared yet: first
        for curve in said.curves:
            for priority, position in wanted_points(curve, config.max_trials):
                want(_moved(point_of_row(curve.first), experiment.axis, position), priority, challenger, baseline)
    return dict(sorted(wanted.items(), key=lambda item: item[1][0]))


def _moved(point: Point, axis: str, position: int) -> Point:
    """POINT at POSITION along AXIS: a new point differs from its curve's others only there."""
    return point._replace(size_bytes=position) if axis == "size_bytes" else point._replace(connections=position)


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
