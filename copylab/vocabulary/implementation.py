"""What one implementation is, as plain data: how its two ends are started (its driver's spec), how many times it
copies each byte, its baselines, its goal in ./inv bench, and how the report presents it (its colour and its
paragraph).

Each experiment lists its implementations with these records (copylab.experiments.NAME.implementations), and the
registry (copylab.declarations.implementations) collects them.  Nothing here runs anything:
copylab.measure.running.drivers maps a DriverSpec to the code that starts and reads its ends.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from copylab.roles import Role
from copylab.vocabulary.values import LAYOUTS, NO_LAYOUT


class DriverKind(enum.Enum):
    """Which code starts and reads an implementation's two ends (copylab.measure.running.drivers has one runner a
    kind)."""

    PROGRAM_PAIR = enum.auto()  # copylab's VARIANT_server and VARIANT_client (csrc/send_VARIANT.c)
    MODEL_PAIR = enum.auto()  # copylab's MODEL_server (csrc/wait_MODEL.c) and load_client
    IPERF3 = enum.auto()  # the external tool iperf3, wrapped


@dataclass(frozen=True)
class DriverSpec:
    """How an implementation's two ends are started and read, declared: the kind of runner, what it is called after
    (the variant, the model or the tool) and what it can be asked for."""

    kind: DriverKind
    name: str
    # csrc/ programs it runs (./inv build makes them): its server and its client; empty for an external tool.
    server: str = ""
    client: str = ""
    # The roles its two programs play (copylab.declarations.contract.SIDES), which say the settings' options they
    # take; empty: not copylab's programs.
    server_role: str = ""
    client_role: str = ""
    workloads: tuple[str, ...] = ("stream", "rr")
    receive_modes: tuple[str, ...] = ("copy", "truncate", "mmap")
    # The message layouts it can be asked for (--layout); none: its message is not held in its memory.
    layouts: tuple[str, ...] = ()
    from_file: bool = False  # its server serves the message file (--file), not messages from memory
    # Why perf cannot count it inside its measured window; None: it can.
    unprofiled_reason: str | None = None
    # How long the client waits after the server starts (a client that does not retry a refused connect).
    start_delay_s: float = 0.0
    # The command that prints the version of the external tool it wraps, recorded in the manifest.
    version_command: tuple[str, ...] = ()

    @property
    def programs(self) -> tuple[str, ...]:
        return tuple(program for program in (self.server, self.client) if program)


def program_pair(variant: str, *, from_file: bool = False, layouts: tuple[str, ...] = LAYOUTS) -> DriverSpec:
    """VARIANT_server sends through csrc/send_VARIANT.c; VARIANT_client receives (the same code for every variant)."""
    return DriverSpec(
        DriverKind.PROGRAM_PAIR,
        variant,
        server=f"{variant}_server",
        client=f"{variant}_client",
        server_role="server",
        client_role="client",
        layouts=layouts,
        from_file=from_file,
    )


def model_pair(model: str) -> DriverSpec:
    """MODEL_server answers requests while waiting for connections its way (csrc/wait_MODEL.c); load_client keeps
    the trial's connections busy with one request outstanding each."""
    return DriverSpec(
        DriverKind.MODEL_PAIR,
        model,
        server=f"{model}_server",
        client="load_client",
        server_role="model_server",
        client_role="load_client",
        workloads=("rr",),
        receive_modes=("copy",),
    )


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


RECEIVE_MODES: dict[str, ReceiveMode] = {
    mode.name: mode
    for mode in (
        ReceiveMode(
            "copy",
            1,
        ),
        ReceiveMode(
            "truncate",
            0,
        ),
        ReceiveMode(
            "mmap",
            0,
        ),
    )
}


@dataclass(frozen=True)
class BenchGoal:
    """In ./inv bench, throughput against another implementation on the same link, interleaved."""

    against: Implementation
    at_least: float  # median of the per-pair throughput ratios
    # The goal holds with the message in this layout, like for like with the implementation it is held to (one
    # buffer); the bench reports the sender's other layouts beside it, without a verdict.
    layout: str = "contiguous"
    sizes: tuple[int, ...] = (65536, 1024)  # message sizes the goal holds at


# matplotlib's tab10: ten colours a reader tells apart, from which each experiment gives its implementations one each.
TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


@dataclass(frozen=True)
class Implementation:
    name: str
    driver: DriverSpec
    copies: Copies
    color: str  # its colour in every figure
    explanation: str  # its paragraph of Markdown where the report presents its experiment's implementations
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
    def in_study(self) -> bool:
        """One of the study's variants or a reference tool: what the report's Parts D and E are about."""
        return self.role is not None or self.reference

    @property
    def zero_copy(self) -> bool:
        """Whether its sends are zero-copy sends whose completions it counts (the zc_* columns)."""
        return "zc_completed" in self.columns
