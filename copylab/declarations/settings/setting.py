"""What a sweep setting declares (Setting), and how a setting reaches the C programs (ProgramOption).

copylab.declarations.settings.table lists every setting; this module is what each entry is written in.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from copylab.declarations.settings.socket_buffer import CappedEnds
from copylab.vocabulary.values import Column

# int/float/str/bool: one value; ints/sizes/strs: a list (sizes take K, M, G suffixes on the command line).
Kind = Literal["int", "float", "str", "bool", "ints", "sizes", "strs"]
LISTS = ("ints", "sizes", "strs")
UNSET = object()
Choices = tuple[str, ...] | Callable[[], Sequence[str]]

# A drawn setting's values: below 2**31, short enough to read and type back (--seed N).
DRAWN_BELOW = 1 << 31


def draw() -> int:
    """A drawn setting's value for a sweep that gives none (copylab.declarations.settings.table: the seed)."""
    return secrets.randbelow(DRAWN_BELOW)


@dataclass(frozen=True)
class ProgramOption:
    """How a setting reaches copylab's own programs: OPTION (a flag for a bool) on the programs that play each of
    ROLES (copylab.declarations.contract.SIDES: the copies experiment's server and client, the servers
    experiment's model_server and load_client)."""

    option: str
    roles: tuple[Literal["server", "client", "model_server", "load_client"], ...]


EVERY_PROGRAM: tuple[Literal["server", "client", "model_server", "load_client"], ...] = (
    "server",
    "client",
    "model_server",
    "load_client",
)


@dataclass(frozen=True)
class Setting:
    name: str
    kind: Kind
    default: Any
    help: str
    low: float | None = None  # limits of a number, or of every item of a list
    high: float | None = None
    low_open: bool = False  # the low limit itself is refused (a duration must be above 0)
    choices: Choices | None = None  # what a string (or every item of a list) may be
    optional: bool = False  # None is allowed (not set)
    cli: str | None = ""  # its run-sweep option without the dashes; "" derives it from the name; None: none
    column: Column | None = None  # the trials.csv column its value is recorded in, per row
    program: ProgramOption | None = None
    legacy: Any = UNSET  # what a manifest written before the setting existed implies for it (default: default)
    limit: str | None = None  # the macro of csrc/limits.h that carries `high`
    length: int | None = None  # a list of exactly this many items
    # Where the default (None) depends on where the sweep runs: the value it takes on a testbed.
    chosen_on: Callable[[CappedEnds], Any] | None = None
    # Drawn at random (draw) for every sweep that gives no value, and recorded in its manifest like any other: the
    # default (None) then means "drawn".
    drawn: bool = False

    @property
    def option(self) -> str | None:
        """The command-line option's name, without its dashes."""
        if self.cli is None:
            return None
        return self.cli or self.name.removesuffix("_s").replace("_", "-")

    @property
    def parameter(self) -> str | None:
        """The run-sweep task's parameter for it (invoke turns underscores into dashes)."""
        return None if self.option is None else self.option.replace("-", "_")

    def allowed(self) -> tuple[str, ...] | None:
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)
