"""Which trials a sweep runs, and in what order: the grid, and the design that orders it.

- **randomized**: every trial of the grid in one seeded random order (the whole grid x trials shuffled), so
  drift spreads over every configuration; with --target-ci, rounds of the configurations still imprecise.
- **blocked** (the default): the grid's configurations are grouped by point (workload, size, threads,
  connections, pinning); block r of a point runs its contenders (implementation, receive mode, layout) back to
  back in a seeded random order, and the blocks of a round are shuffled across points.  Comparisons then pair the trials
  of one block (copylab.analysis.stats).  A trial's repetition is its block's number at its point.
- **budgeted** (blocked, with --budget): a first pass of `trials` blocks of the contenders whose curves decide
  the experiment's answers, and of every contender at the first thread count; then, while the budget lasts, a
  block at every point where one of those comparisons is still undecided (copylab.measure.planning.allocation),
  then where a configuration's mean is still imprecise, up to max_trials blocks; then the other contenders
  elsewhere, whole points of `trials` blocks (budgeted_rounds).

Every schedule is lazy and decided from the rows recorded so far, so an interrupted sweep resumes where it was.
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from copylab import experiments
from copylab.analysis.stats import IMPRECISE
from copylab.declarations import implementations
from copylab.declarations.config import ADAPTIVE_MIN_TRIALS
from copylab.declarations.implementations import STUDY_LAYOUT
from copylab.declarations.sweep_config import SweepConfig
from copylab.declarations.vocabulary import NO_LAYOUT
from copylab.measure.running.spec import TrialSpec
from copylab.segments import MAPPING_MTU, PAGE, TCP_IPV4_HEADERS

# The metric whose precision adaptive repetition watches, per workload.
PRECISION_METRIC = {"stream": "throughput_gbps", "rr": "latency_mean_us"}


class Configuration(NamedTuple):
    implementation: str
    workload: str
    size_bytes: int
    threads: int
    connections: int
    pinning: str
    receive: str
    layout: str = STUDY_LAYOUT
    idle_connections: int = 0
    offered_rate: int = 0


class Point(NamedTuple):
    """Where contenders are compared: everything of a configuration but the implementation and receive mode."""

    workload: str
    size_bytes: int
    threads: int
    connections: int
    idle_connections: int
    offered_rate: int
    pinning: str


Contender = tuple[str, str, str]  # (implementation, receive mode, layout)


def point_of(configuration: Configuration) -> Point:
    c = configuration
    return Point(c.workload, c.size_bytes, c.threads, c.connections, c.idle_connections, c.offered_rate, c.pinning)


def receive_modes_of(config: SweepConfig, implementation: str) -> list[str]:
    """The receive modes IMPLEMENTATION's trials run in: the sweep's that its driver supports, copy for all, the
    others for --receive-for's implementations (all when it names none)."""
    supported = config.member(implementation).driver.receive_modes
    everywhere = not config.receive_for or implementation in config.receive_for
    return [mode for mode in config.receive if mode in supported and (mode == "copy" or everywhere)]


def mapping_note(config: SweepConfig) -> str | None:
    """What a sweep that receives by mapping (--receive mmap) cannot map, said before it runs; None when nothing
    stands in the way."""
    if "mmap" not in config.receive:
        return None
    if config.server_host:
        payload = config.mtu - TCP_IPV4_HEADERS
        if not config.tune_remote or payload % PAGE == 0:
            return None
        return (
            f"--receive mmap: at MTU {config.mtu} a TCP segment carries {payload} bytes, not whole pages, so a "
            f"NIC's receive buffers hold no whole page to map; MTU {MAPPING_MTU} makes them whole"
        )
    receiving = [name for name in config.implementations if "mmap" in receive_modes_of(config, name)]
    copying = [name for name in receiving if not implementations.uses_zero_copy(name)]
    if config.sender_pages != "large" or not copying:
        return None
    who = f"{copying[0]} copies its" if len(copying) == 1 else f"{', '.join(copying)} copy their"
    return (
        f"--receive mmap: {who} bytes into large pages, which the receiver cannot map, so those mmap trials copy "
        "every byte (--sender-pages small lets them map)"
    )


def layouts_of(config: SweepConfig, implementation: str) -> list[str]:
    """The layouts IMPLEMENTATION runs in: the sweep's it can be asked for, its only one, or none to choose."""
    fixed = config.member(implementation).fixed_layout
    if fixed is not None:
        return [fixed]
    supported = config.member(implementation).driver.layouts
    everywhere = not config.layout_for or implementation in config.layout_for
    chosen = [layout for layout in config.layout if layout in supported and (layout == STUDY_LAYOUT or everywhere)]
    return chosen or [STUDY_LAYOUT]


def _layouts_receiving(config: SweepConfig, implementation: str, receive: str) -> list[str]:
    """The layouts IMPLEMENTATION runs in receiving by RECEIVE: the other layouts are compared with the study's
    receiving by copy only (copylab.declarations.implementations.comparison_pairs), so beside it they receive by copy
    only."""
    layouts = layouts_of(config, implementation)
    if receive == implementations.BASELINE_RECEIVE:
        return layouts
    return [layout for layout in layouts if layout in (STUDY_LAYOUT, NO_LAYOUT)] or layouts


def offered_rates(config: SweepConfig) -> tuple[int, ...]:
    """The rates a sweep offers on a schedule; closed loop offers none (0)."""
    return tuple(config.rates) if config.load == "open" else (0,)


def configurations(config: SweepConfig, skip: frozenset[str] = frozenset()) -> list[Configuration]:
    """The grid, without the implementations in SKIP (those that cannot run here)."""
    grid = []
    deciding = deciding_contenders(config) if config.side_sizes else set()
    for implementation in config.implementations:
        if implementation in skip:
            continue
        for workload in config.workloads:
            if workload not in config.member(implementation).driver.workloads:
                continue
            for size in config.sizes if workload == "stream" else config.rr_sizes:
                for threads in config.threads:
                    # copies: a connection per thread; servers: the connections the load client keeps busy
                    for connections in config.connections or (threads,):
                        for pinning in config.pinning:
                            for receive in receive_modes_of(config, implementation):
                                grid += [
                                    Configuration(
                                        implementation,
                                        workload,
                                        size,
                                        threads,
                                        connections,
                                        pinning,
                                        receive,
                                        layout,
                                        idle,
                                        rate,
                                    )
                                    for layout in _layouts_receiving(config, implementation, receive)
                                    for idle in config.idle_connections
                                    for rate in offered_rates(config)
                                ]
    return [c for c in grid if _runs_at(config, deciding, c)]


def _runs_at(config: SweepConfig, deciding: set[Contender], configuration: Configuration) -> bool:
    """Whether CONFIGURATION is measured: the deciding contenders at every stream size, everything else at
    --side-sizes."""
    c = configuration
    if c.workload != "stream" or not config.side_sizes or c.size_bytes in config.side_sizes:
        return True
    return contender_of(c) in deciding


def configuration_of(row: Any) -> Configuration:
    return Configuration(
        row["implementation"],
        row["workload"],
        int(row["size_bytes"]),
        int(row["threads"]),
        int(row["connections"]),
        row["pinning"],
        row["receive"],
        row["layout"],
        int(row["idle_connections"]),
        int(row["offered_rate"]),
    )


def _spec(
    config: SweepConfig, configuration: Configuration, repetition: int, order_index: int, position: int | None = None
) -> TrialSpec:
    c = configuration
    # A layout that is not chosen, no idle connection and no offered rate are left out of the id, so that sweeps
    # from before each was an axis resume.
    named = [*c[:7], *([c.layout] if c.layout not in (STUDY_LAYOUT, NO_LAYOUT) else [])]
    named += [f"idle{c.idle_connections}"] if c.idle_connections else []
    named += [f"rate{c.offered_rate}"] if c.offered_rate else []
    return TrialSpec(
        f"{'-'.join(map(str, named))}-r{repetition}",
        order_index,
        config.member(c.implementation),
        c.workload,
        c.size_bytes,
        c.threads,
        c.pinning,
        repetition,
        c.receive,
        c.connections,
        position,
        c.layout,
        c.idle_connections,
        c.offered_rate,
    )


def _rng(config: SweepConfig, *parts: object) -> random.Random:
    return random.Random(zlib.crc32(repr((config.seed, *parts)).encode()))


def _points(grid: list[Configuration]) -> dict[Point, list[Configuration]]:
    """The grid's configurations by point, in grid order."""
    grouped: dict[Point, list[Configuration]] = {}
    for configuration in grid:
        grouped.setdefault(point_of(configuration), []).append(configuration)
    return grouped


def _round(config: SweepConfig, blocks: list[tuple[Point, int, list[Configuration]]], key: object) -> list[TrialSpec]:
    """One round of blocks (point, block number, contenders): blocks shuffled, contenders shuffled in each."""
    blocks = list(blocks)
    _rng(config, "round", key).shuffle(blocks)
    specs = []
    for point, number, contenders in blocks:
        contenders = list(contenders)
        _rng(config, "block", point, number).shuffle(contenders)
        specs += [_spec(config, c, number, 0, position) for position, c in enumerate(contenders)]
    return specs


def plan(config: SweepConfig, skip: frozenset[str] = frozenset()) -> list[TrialSpec]:
    """Every trial of the fixed design (randomized, or blocked without a budget), in its seeded order."""
    grid = configurations(config, skip)
    if config.design == "blocked":
        points = _points(grid)
        specs = []
        for number in range(1, config.trials + 1):
            specs += _round(config, [(p, number, cs) for p, cs in points.items()], number)
        return [dataclasses.replace(spec, order_index=index) for index, spec in enumerate(specs)]
    trials = [(c, repetition) for c in grid for repetition in range(1, config.trials + 1)]
    random.Random(config.seed).shuffle(trials)
    return [_spec(config, c, repetition, index) for index, (c, repetition) in enumerate(trials)]


def imprecision(values: list[float], confidence: float = 0.95) -> float:
    """The confidence interval's half-width as a share of |mean|: infinite below ADAPTIVE_MIN_TRIALS values."""
    if len(values) < ADAPTIVE_MIN_TRIALS:
        return math.inf
    sample = np.asarray(values, dtype=float)
    half_width = stats.t.ppf((1 + confidence) / 2, len(sample) - 1) * sample.std(ddof=1) / math.sqrt(len(sample))
    if half_width == 0:
        return 0.0
    mean = abs(float(sample.mean()))
    return float(half_width / mean) if mean else math.inf


def precise_enough(values: list[float], target: float, confidence: float = 0.95) -> bool:
    """Is the confidence interval's half-width within target x |mean|?"""
    return imprecision(values, confidence) <= target


def measured(ok_rows: pd.DataFrame) -> dict[Configuration, list[float]]:
    """Each configuration's precision metric, trial by trial."""
    found: dict[Configuration, list[float]] = {}
    for _, row in ok_rows.iterrows():
        value = row[PRECISION_METRIC[row["workload"]]]
        if not pd.isna(value):
            found.setdefault(configuration_of(row), []).append(float(value))
    return found


def adaptive_rounds(
    config: SweepConfig, measured: dict[Configuration, list[float]], skip: frozenset[str] = frozenset()
) -> Iterator[list[TrialSpec]]:
    """Round r runs repetition r of every configuration still short of the target, shuffled.

    Lazy: each round is decided from `measured` as it stands once the previous round ran.
    """
    order = 0
    for repetition in range(1, config.max_trials + 1):
        pending = [
            c for c in configurations(config, skip) if not precise_enough(measured.get(c, []), config.target_ci or 0.0)
        ]
        random.Random(config.seed * 1000 + repetition).shuffle(pending)
        if not pending:
            return
        yield [_spec(config, c, repetition, order + index) for index, c in enumerate(pending)]
        order += len(pending)


@dataclass
class Progress:
    """What a budgeted schedule decides from: the rows recorded so far and the time the trials took."""

    rows: pd.DataFrame  # every recorded row, ok or failed
    spent_s: float
    trial_s: float  # what one more trial is expected to take (window + the harness's median time)


def contender_of(configuration: Configuration) -> Contender:
    return configuration.implementation, configuration.receive, configuration.layout


def study_contender(name: str) -> Contender:
    """NAME as the study's comparisons take it: receiving by copy, in the study's layout (or its only one)."""
    return name, implementations.BASELINE_RECEIVE, implementations.fixed_layout(name) or STUDY_LAYOUT


def deciding_contenders(config: SweepConfig) -> set[Contender]:
    """The contenders of the comparisons that decide the sweep's experiment's answers."""
    pairs = implementations.deciding_pairs(experiments.get(config.experiment))
    return {study_contender(name) for pair in pairs for name in pair}


def partners(contender: Contender) -> set[Contender]:
    """What a contender is compared with (copylab.declarations.implementations.comparison_pairs): in a layout other
    than the study's, itself in the study's; otherwise its baselines in its own receive mode, and itself receiving by
    copy."""
    name, receive, layout = contender
    if layout not in (STUDY_LAYOUT, NO_LAYOUT):
        return {study_contender(name)}
    found = {(base, receive, study_contender(base)[2]) for base in implementations.get(name).baselines}
    if receive != implementations.BASELINE_RECEIVE:
        found.add(study_contender(name))
    return found


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


def _with_partners(chosen: list[Configuration], everyone: list[Configuration]) -> list[Configuration]:
    """CHOSEN with what they are compared with, from EVERYONE at their point, in EVERYONE's order."""
    wanted = {contender_of(c) for c in chosen}
    wanted |= {partner for c in chosen for partner in partners(contender_of(c))}
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
    points = _points(configurations(config, skip))
    first = _first_pass_configurations(config, points)
    yield from _first_pass(config, progress, first)
    yield from _undecided_rounds(config, progress, undecided, first)
    yield from _imprecise_rounds(config, progress, skip)
    yield from _other_contenders_rounds(config, progress, points, first)


def _budget_left(config: SweepConfig, now: Progress) -> float:
    assert config.budget_s is not None
    return config.budget_s - now.spent_s


def _first_pass_configurations(
    config: SweepConfig, points: dict[Point, list[Configuration]]
) -> dict[Point, list[Configuration]]:
    """Per point, what the first pass runs: the deciding contenders, and every contender at the first thread count."""
    deciding = deciding_contenders(config)
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
            (p, number, [c for c in cs if _spec(config, c, number, 0).trial_id not in ok]) for p, cs in first.items()
        ]
        specs = _round(config, [block for block in blocks if block[2]], number)
        if specs:
            yield specs


def _undecided_rounds(
    config: SweepConfig,
    progress: Callable[[], Progress],
    undecided: Callable[[pd.DataFrame], dict[Point, set[Contender]]],
    first: dict[Point, list[Configuration]],
) -> Iterator[list[TrialSpec]]:
    """Phase 2: a block at every point whose deciding comparison is still UNDECIDED, while the budget lasts."""
    for round_number in range(1, config.max_trials + 1):
        now = progress()
        counts, numbers = _done(now.rows), _next_numbers(now.rows)
        blocks = []
        for point, contenders in undecided(now.rows[now.rows["status"] == "ok"]).items():
            chosen = [c for c in first.get(point, []) if contender_of(c) in contenders]
            if chosen and all(counts.get(c, 0) < config.max_trials for c in chosen):
                blocks.append((point, numbers.get(point, 1), chosen))
        blocks = _affordable(blocks, _budget_left(config, now), now.trial_s)
        if not blocks:
            break
        yield _round(config, blocks, ("undecided", round_number))


def imprecise_blocks(
    config: SweepConfig, rows: pd.DataFrame, skip: frozenset[str] = frozenset()
) -> list[tuple[float, Point, list[Configuration]]]:
    """(imprecision, point, its block) of every point with a configuration whose mean is still imprecise (the report's
    unstable rule) and short of max_trials, nearest to precise first: the block holds those configurations with what
    they are compared with."""
    points = _points(configurations(config, skip))
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
        blocks.append((nearest[point], point, _with_partners(chosen, cs)))
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
        yield _round(config, blocks, ("imprecise", round_number))


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
            rest[point] = (theirs, _with_partners(theirs, cs))
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
        specs = _round(config, blocks, ("others", number))
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
