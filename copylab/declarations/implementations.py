"""The registry: every implementation copylab can measure, and everything the rest of copylab needs to know of it.

An implementation declares how its two ends are started and read (its driver), which optional trials.csv
columns it fills, how many times each payload byte is copied on its path, the baselines it is compared with,
its colour, its paragraph in the report's Part A and its goal in ./inv bench.  Each experiment lists its own
(copylab.experiments.NAME.implementations, named by its declaration); this module collects them once, on first
use, in the experiments' order.  Adding one is a C file in csrc/ (or a wrapper in copylab.measure.drivers), one
entry in its experiment's list and its tests; no other module names an implementation.

The receiver's side has its own small registry, RECEIVE_MODES: how the client takes the bytes in.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from copylab import experiments
from copylab.declarations.vocabulary import LAYOUTS, NO_LAYOUT
from copylab.errors import CopylabError
from copylab.experiment import Experiment
from copylab.roles import STUDY_BASELINE, Role


class Driver(Protocol):
    """What the registry knows of a driver (copylab.measure.drivers): the programs it runs and the message
    layouts its sender can be given."""

    @property
    def programs(self) -> tuple[str, ...]: ...
    @property
    def layouts(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class UserCopy:
    """How a sender copies a message into a buffer of its own before sending it."""

    call: str  # "memcpy" (libc, in user space) or "read" (the kernel's copy to user space)
    per_message: int  # calls per message: one per field, or one for the whole message

    def bytes_per_call(self, size: int) -> int:
        return size // self.per_message


@dataclass(frozen=True)
class Copies:
    """How many times the CPU copies each payload byte on its way from the sender's memory to the receiver's."""

    sender_user: int  # in user space before the send (packing the fields, reading a file into a buffer)
    sender_kernel: int  # by the sending kernel, into socket buffers
    local_delivery: int = 0  # by the kernel when a local receiver may not keep the sender's pinned pages
    user_copy: UserCopy | None = None  # how the sender_user copy is made

    @property
    def at_send(self) -> int:
        """Copies made on the sending side when the message leaves user space."""
        return self.sender_user + self.sender_kernel

    def per_byte(self, receive: str = "copy") -> int:
        """Copies end to end on local delivery (veth), the receiver's included."""
        return self.at_send + self.local_delivery + RECEIVE_MODES[receive].copies


@dataclass(frozen=True)
class ReceiveMode:
    """A way for the client to take the bytes in (csrc/receive.c)."""

    name: str
    copies: int  # copies of each byte into the receiver's user space (mmap: 0 where whole pages map)
    explanation: str  # Markdown paragraph of the report's Part A
    color: str


RECEIVE_MODES: dict[str, ReceiveMode] = {
    mode.name: mode
    for mode in (
        ReceiveMode(
            "copy",
            1,
            "**Receive `copy`.** The client's `recv()` copies the data from the socket buffers into its own "
            "buffer: the receiver's copy, made by the receiving kernel for every byte.",
            "#333333",
        ),
        ReceiveMode(
            "truncate",
            0,
            "**Receive `truncate`.** `recv(MSG_TRUNC)` on TCP consumes the data without copying it to user space: "
            "the receiver's copy disappears, so comparing `truncate` with `copy` for the same sender measures what "
            "that copy costs. (With `--verify` the bytes are first read with `MSG_PEEK`, a copy, to check them.)",
            "#e69f00",
        ),
        ReceiveMode(
            "mmap",
            0,
            "**Receive `mmap`.** `TCP_ZEROCOPY_RECEIVE` maps whole payload pages into a region the client mapped "
            "on the socket instead of copying them; only page-aligned, page-sized payload can be mapped, the rest "
            "is still read with `recv()`. The trials count both (`rx_mapped_bytes`, `rx_copied_bytes`): whether "
            "anything maps depends on how the sender built its packets and on the MTU.",
            "#0072b2",
        ),
    )
}
BASELINE_RECEIVE = "copy"


@dataclass(frozen=True)
class BenchGoal:
    """In ./inv bench, throughput against another implementation on the same link, interleaved."""

    against: str
    at_least: float  # median of the per-pair throughput ratios
    # The goal holds with the message in this layout, like for like with the implementation it is held to (one
    # buffer); the bench reports the sender's other layouts beside it, without a verdict.
    layout: str = "contiguous"
    sizes: tuple[int, ...] = (65536, 1024)  # message sizes the goal holds at


@dataclass(frozen=True)
class Implementation:
    name: str
    summary: str  # one line: how the bytes leave user space
    explanation: str  # Markdown paragraph of the report's Part A
    driver: Driver
    copies: Copies
    color: str
    baselines: tuple[str, ...] = ()  # ratios and crossovers are computed against them
    role: Role | None = None  # its variant of the study, if it is one
    reference: bool = False  # an external tool measured for reference (drawn dashed)
    columns: tuple[str, ...] = ()  # optional trials.csv columns it fills
    bench: BenchGoal | None = None
    experiment: str = ""  # set by the registry: the experiment that lists it
    max_connections: int | None = None  # the most connections it can hold, when it has a limit of its own
    bench_only: bool = False  # a yardstick of ./inv bench, in no profile (a sweep may still name it)
    # Its round trip at one connection is the host's floor for its experiment: a minimal ping-pong, measured once
    # per sweep at every pinning, which the report subtracts so that the host's wake-up cost is not read as a
    # model's.
    floor: bool = False

    @property
    def fixed_layout(self) -> str | None:
        """The layout it always runs in when its layout cannot be chosen (NO_LAYOUT: its message is not in its
        memory); None when --layout chooses it."""
        layouts = self.driver.layouts
        if len(layouts) > 1:
            return None
        return layouts[0] if layouts else NO_LAYOUT

    @property
    def zero_copy(self) -> bool:
        """Whether its sends are zero-copy sends whose completions it counts (the zc_* columns)."""
        return "zc_completed" in self.columns


@functools.cache
def registry() -> dict[str, Implementation]:
    """Every implementation by name, each experiment's in its own order, the experiments in theirs."""
    return {
        implementation.name: dataclasses.replace(implementation, experiment=experiment.name)
        for experiment in experiments.EXPERIMENTS.values()
        for implementation in experiment.members()
    }


def get(name: str) -> Implementation:
    """The registry entry of NAME; a one-line error naming the known ones otherwise."""
    try:
        return registry()[name]
    except KeyError:
        raise CopylabError(f"unknown implementation {name!r} (choose from {', '.join(registry())})") from None


def names(experiment: str | None = None) -> tuple[str, ...]:
    """Every implementation, or those of one experiment."""
    return tuple(name for name, impl in registry().items() if experiment in (None, impl.experiment))


def experiment(name: str) -> Experiment:
    """The experiment NAME (copylab.experiments), one-line error for an unknown one."""
    return experiments.get(name)


def deciding_pairs(experiment: Experiment) -> list[tuple[str, str]]:
    """The (challenger, baseline) pairs whose curves answer EXPERIMENT's question: the study's variants against its
    baseline variant (deciding "roles"), or every implementation against its baselines ("baselines")."""
    members = [registry()[name] for name in names(experiment.name)]
    if experiment.deciding == "roles":
        baseline = next(impl.name for impl in members if impl.role == STUDY_BASELINE)
        return [(impl.name, baseline) for impl in members if impl.role and impl.name != baseline]
    return [(impl.name, base) for impl in members for base in impl.baselines]


def ordered(present: Iterable[str]) -> list[str]:
    """PRESENT in registry order (names the registry no longer has last, sorted)."""
    present = set(present)
    return [name for name in registry() if name in present] + sorted(present - set(registry()))


def by_role(role: Role) -> Implementation | None:
    """The implementation that plays one of the study's variants."""
    return next((impl for impl in registry().values() if impl.role == role), None)


def floor_of(experiment: str) -> Implementation | None:
    """The implementation whose one-connection round trip is EXPERIMENT's host floor, if it has one."""
    return next((get(name) for name in names(experiment) if get(name).floor), None)


def shared_baseline(experiment: str) -> str:
    """The baseline most implementations of EXPERIMENT are compared with (copies: the study's two-copy variant)."""
    named = [b for name in names(experiment) for b in get(name).baselines]
    if not named:
        return names(experiment)[0]
    return max(dict.fromkeys(named), key=named.count)


# The study's own layout: its 8 fields, each allocated apart.
STUDY_LAYOUT = LAYOUTS[0]


# Joins an implementation and a layout other than the study's in a contender's label.
LAYOUT_MARK = "@"


def fixed_layout(name: str) -> str | None:
    """The layout NAME always runs in when its layout cannot be chosen (Implementation.fixed_layout)."""
    return get(name).fixed_layout


def contender(implementation: str, receive: str, layout: str = STUDY_LAYOUT) -> str:
    """What a comparison calls one implementation with one receive mode and message layout: 'two_copy',
    'two_copy/truncate', 'one_copy@contiguous' (the study's layout, or none to choose, is left unsaid)."""
    name = implementation if layout in (STUDY_LAYOUT, NO_LAYOUT) else f"{implementation}{LAYOUT_MARK}{layout}"
    return name if receive == BASELINE_RECEIVE else f"{name}/{receive}"


def parse_contender(label: str) -> tuple[Implementation, str]:
    """The implementation and receive mode a contender label names; a one-line error for a foreign one."""
    name, _, receive = label.partition("/")
    name = name.partition(LAYOUT_MARK)[0]
    receive = receive or BASELINE_RECEIVE
    if receive not in RECEIVE_MODES:
        raise CopylabError(f"unknown receive mode {receive!r} in {label!r} (choose from {', '.join(RECEIVE_MODES)})")
    return get(name), receive


def in_study(name: str) -> bool:
    """One of the study's variants or a reference tool: what the report's Parts D and E are about."""
    implementation = get(name)
    return implementation.role is not None or implementation.reference


def comparison_pairs(receive_modes: Iterable[str] = (BASELINE_RECEIVE,)) -> list[tuple[str, str]]:
    """(challenger, baseline) contenders: each implementation against its baselines in every receive mode, and
    each implementation in every other receive mode against itself receiving by copy."""
    modes = [mode for mode in RECEIVE_MODES if mode in set(receive_modes)]
    pairs = [
        (contender(impl.name, mode), contender(baseline, mode))
        for mode in modes
        for impl in registry().values()
        for baseline in impl.baselines
    ]
    pairs += [(contender(name, mode), name) for mode in modes if mode != BASELINE_RECEIVE for name in registry()]
    pairs += [
        (contender(impl.name, BASELINE_RECEIVE, layout), impl.name)
        for impl in registry().values()
        if fixed_layout(impl.name) is None
        for layout in impl.driver.layouts
        if layout != STUDY_LAYOUT
    ]
    return pairs


def programs(members: Iterable[Implementation]) -> list[str]:
    """The csrc/ programs the given implementations run."""
    return [program for implementation in members for program in implementation.driver.programs]


def uses_zero_copy(name: str) -> bool:
    """Whether NAME's sends are zero-copy sends whose completions it counts (the zc_* columns)."""
    return get(name).zero_copy
