"""Which trials a sweep runs, and in what order: the grid, and the design that orders it.

- **randomized**: every trial of the grid in one seeded random order (the whole grid x trials shuffled), so
  drift spreads over every configuration; with --target-ci, rounds of the configurations still imprecise.
- **blocked** (the default): the grid's configurations are grouped by point (workload, size, threads,
  connections, pinning); block r of a point runs its contenders (implementation, receive mode, layout) back to
  back in a balanced order (block_order: every pair of contenders runs in both orders, once each, in every two
  consecutive blocks), and the blocks of a round are shuffled across points.  Comparisons then pair the trials of
  one block (copylab.analysis.stats).  A trial's repetition is its block's number at its point.
- **budgeted** (blocked, with --budget): copylab.measure.planning.budgeted.

Every order is drawn from the sweep's seed (--seed, or drawn at random when the sweep is made and recorded in its
manifest), so a sweep's order can be replayed exactly.  Every schedule is lazy and decided from the rows recorded so
far, so an interrupted sweep resumes where it was.
"""

from __future__ import annotations

import dataclasses
import math
import random
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from copylab.declarations import implementations
from copylab.declarations.config import ADAPTIVE_MIN_TRIALS
from copylab.declarations.implementations import STUDY_LAYOUT
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure.running.spec import TrialSpec
from copylab.segments import MAPPING_MTU, PAGE, TCP_IPV4_HEADERS
from copylab.vocabulary.implementation import Implementation
from copylab.vocabulary.values import NO_LAYOUT

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


def receive_modes_of(config: SweepConfig, implementation: Implementation) -> list[str]:
    """The receive modes IMPLEMENTATION's trials run in: the sweep's that its driver supports, copy for all, the
    others for --receive-for's implementations (all when it names none)."""
    supported = implementation.driver.receive_modes
    everywhere = not config.receive_for or implementation.name in config.receive_for
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
    receiving = [member for member in config.members.values() if "mmap" in receive_modes_of(config, member)]
    copying = [member.name for member in receiving if not member.zero_copy]
    if config.sender_pages != "large" or not copying:
        return None
    who = f"{copying[0]} copies its" if len(copying) == 1 else f"{', '.join(copying)} copy their"
    return (
        f"--receive mmap: {who} bytes into large pages, which the receiver cannot map, so those mmap trials copy "
        "every byte (--sender-pages small lets them map)"
    )


def layouts_of(config: SweepConfig, implementation: Implementation) -> list[str]:
    """The layouts IMPLEMENTATION runs in: the sweep's it can be asked for, its only one, or none to choose."""
    fixed = implementation.fixed_layout
    if fixed is not None:
        return [fixed]
    supported = implementation.driver.layouts
    everywhere = not config.layout_for or implementation.name in config.layout_for
    chosen = [layout for layout in config.layout if layout in supported and (layout == STUDY_LAYOUT or everywhere)]
    return chosen or [STUDY_LAYOUT]


def _layouts_receiving(config: SweepConfig, implementation: Implementation, receive: str) -> list[str]:
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
    for implementation in config.members.values():
        if implementation.name in skip:
            continue
        for workload in config.workloads:
            if workload not in implementation.driver.workloads:
                continue
            for size in config.sizes if workload == "stream" else config.rr_sizes:
                for threads in config.threads:
                    # copies: a connection per thread; servers: the connections the load client keeps busy
                    for connections in config.connections or (threads,):
                        for pinning in config.pinning:
                            for receive in receive_modes_of(config, implementation):
                                grid += [
                                    Configuration(
                                        implementation.name,
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


def spec_of(
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
        config.members[c.implementation],
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


def by_point(grid: list[Configuration]) -> dict[Point, list[Configuration]]:
    """The grid's configurations by point, in grid order."""
    grouped: dict[Point, list[Configuration]] = {}
    for configuration in grid:
        grouped.setdefault(point_of(configuration), []).append(configuration)
    return grouped


def block_order(config: SweepConfig, point: Point, number: int, contenders: list[Configuration]) -> list[Configuration]:
    """The order block NUMBER of POINT runs CONTENDERS in.  Each contender has a seeded random rank at its point; the
    blocks go in twos, each two from a seeded rotation of the ranks, the first of them in its order and the second in
    reverse.  So any two contenders of a point run in both orders, once each, in every two consecutive blocks (an
    order effect cancels instead of repeating in every block), whichever others share the blocks, and who runs first
    changes from two blocks to the next."""
    pair = (number + 1) // 2
    turn = _rng(config, "turn", point, pair).random()
    ranked = sorted(contenders, key=lambda c: (_rng(config, "rank", point, contender_of(c)).random() - turn) % 1.0)
    return ranked if number % 2 else ranked[::-1]


def round_of(config: SweepConfig, blocks: list[tuple[Point, int, list[Configuration]]], key: object) -> list[TrialSpec]:
    """One round of blocks (point, block number, contenders): blocks shuffled, contenders in their block's order."""
    blocks = list(blocks)
    _rng(config, "round", key).shuffle(blocks)
    specs = []
    for point, number, contenders in blocks:
        ordered = block_order(config, point, number, list(contenders))
        specs += [spec_of(config, c, number, 0, position) for position, c in enumerate(ordered)]
    return specs


def plan(config: SweepConfig, skip: frozenset[str] = frozenset()) -> list[TrialSpec]:
    """Every trial of the fixed design (randomized, or blocked without a budget), in its seeded order."""
    grid = configurations(config, skip)
    if config.design == "blocked":
        points = by_point(grid)
        specs = []
        for number in range(1, config.trials + 1):
            specs += round_of(config, [(p, number, cs) for p, cs in points.items()], number)
        return [dataclasses.replace(spec, order_index=index) for index, spec in enumerate(specs)]
    trials = [(c, repetition) for c in grid for repetition in range(1, config.trials + 1)]
    random.Random(config.seed).shuffle(trials)
    return [spec_of(config, c, repetition, index) for index, (c, repetition) in enumerate(trials)]


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
        yield [spec_of(config, c, repetition, order + index) for index, c in enumerate(pending)]
        order += len(pending)


def at_point(point: Point, contenders: set[Contender]) -> list[Configuration]:
    """CONTENDERS' configurations at POINT, which need not be on the sweep's grid (a size an allocator adds between
    two of its sizes)."""
    p = point
    return [
        Configuration(
            name,
            p.workload,
            p.size_bytes,
            p.threads,
            p.connections,
            p.pinning,
            receive,
            layout,
            p.idle_connections,
            p.offered_rate,
        )
        for name, receive, layout in sorted(contenders)
    ]


def contender_of(configuration: Configuration) -> Contender:
    return configuration.implementation, configuration.receive, configuration.layout


def study_contender(implementation: Implementation) -> Contender:
    """IMPLEMENTATION as the study's comparisons take it: receiving by copy, in the study's layout (or its only
    one)."""
    return implementation.name, implementations.BASELINE_RECEIVE, implementation.fixed_layout or STUDY_LAYOUT


def deciding_contenders(config: SweepConfig) -> set[Contender]:
    """The contenders of the comparisons that decide the sweep's experiment's answers."""
    return {study_contender(member) for pair in config.deciding for member in pair}


def partners(config: SweepConfig, contender: Contender) -> set[Contender]:
    """What a contender of CONFIG's grid is compared with there (copylab.declarations.implementations.comparison_pairs):
    in a layout other than the study's, itself in the study's; otherwise its baselines in its own receive mode, and
    itself receiving by copy."""
    name, receive, layout = contender
    member = config.members[name]
    if layout not in (STUDY_LAYOUT, NO_LAYOUT):
        return {study_contender(member)}
    found = {
        (base.name, receive, study_contender(base)[2])
        for base in config.members.values()
        if base.name in member.baselines
    }
    if receive != implementations.BASELINE_RECEIVE:
        found.add(study_contender(member))
    return found
