"""Whether two sweeps measured like with like, read from their manifests: the grid (which configurations a sweep
holds: sizes, threads, implementations, ...) and the method (how each configuration is measured: warm-up, window,
transport, ...).  `./inv compare` refuses two sweeps that differ in either, unless told to compare only the
configurations both hold; a test holds each committed reference to the profile it is named after.

The settings that say neither (the trial order's seed, the namespaces' names, how many blocks or how much time a
sweep spent) may differ between sweeps that measured alike.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from copylab import error_catalogue
from copylab.declarations.sweep_config import SweepConfig
from copylab.formatting import fmt_size

# What configurations a sweep holds.
GRID = (
    "implementations",
    "workloads",
    "sizes",
    "side_sizes",
    "rr_sizes",
    "threads",
    "connections",
    "idle_connections",
    "load",
    "rates",
    "pinning",
    "receive",
    "receive_for",
    "layout",
    "layout_for",
)
# How each configuration is measured.
METHOD = (
    "warmup_s",
    "duration_s",
    "design",
    "path",
    "mtu",
    "optmem_max",
    "congestion_control",
    "socket_buffer",
    "sender_pages",
    "distinct_messages",
    "zc_inflight",
    "verify",
    "sanitize",
)
SIZES = ("sizes", "side_sizes", "rr_sizes")


@dataclass(frozen=True)
class Difference:
    setting: str
    a: Any
    b: Any

    @property
    def part(self) -> str:
        return "grid" if self.setting in GRID else "method"

    def text(self) -> str:
        return f"{self.setting} {_shown(self.setting, self.a)} against {_shown(self.setting, self.b)}"


def _shown(setting: str, value: Any) -> str:
    if value is None or value == () or value == []:
        return "none" if value is None else "(none)"
    if isinstance(value, list | tuple):
        return ",".join(_shown(setting, item) for item in value)
    if setting in SIZES:
        return fmt_size(value).replace(" ", "")
    if isinstance(value, float):
        return f"{value:g} s" if setting.endswith("_s") else f"{value:g}"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    """Whether two values of a setting are one: a list and a tuple of the same items are, and so are no list and an
    empty one (a manifest written before a list setting existed holds none)."""
    a, b = (() if value is None and isinstance(other, list | tuple) else value for value, other in ((a, b), (b, a)))
    return (tuple(a) if isinstance(a, list | tuple) else a) == (tuple(b) if isinstance(b, list | tuple) else b)


def differences(a: SweepConfig, b: SweepConfig, settings: Iterable[str] = GRID + METHOD) -> list[Difference]:
    """The settings of grid and method in which sweep A's parameters differ from sweep B's."""
    return [
        Difference(name, getattr(a, name), getattr(b, name))
        for name in settings
        if not _same(getattr(a, name), getattr(b, name))
    ]


def left_out(a: SweepConfig, b: SweepConfig) -> list[str]:
    """What of the grid one sweep holds and the other does not: "sizes 64B only in A", per setting and side."""
    said = []
    for difference in differences(a, b, GRID):
        if not isinstance(difference.a, list | tuple) or not isinstance(difference.b, list | tuple):
            continue
        for side, mine, theirs in (("A", difference.a, difference.b), ("B", difference.b, difference.a)):
            only = [item for item in mine if item not in theirs]
            if only:
                said.append(f"{difference.setting} {_shown(difference.setting, only)} only in {side}")
    return said


def comparable(a: SweepConfig, b: SweepConfig, names: tuple[str, str], shared_only: bool) -> str | None:
    """Refuses, in one line, sweeps A and B (NAMES: as the user named them) of different grids or methods unless
    SHARED_ONLY; then the line that says what was left out of the comparison and which method differs (None when
    they measured alike)."""
    found = differences(a, b)
    if not found:
        return None
    parts = [part for part in ("grid", "method") if any(d.part == part for d in found)]
    if not shared_only:
        how = " and ".join({"grid": "on different grids", "method": "by different methods"}[part] for part in parts)
        details = "; ".join(difference.text() for difference in found)
        raise error_catalogue.SWEEPS_DIFFER.error(a=names[0], b=names[1], how=how, details=details)
    said = [f"left out: {', '.join(left_out(a, b)) or 'nothing'}"]
    method = [difference.text() for difference in found if difference.part == "method"]
    if method:
        said.append(f"measured differently: {'; '.join(method)}")
    return f"copylab: comparing only the configurations both sweeps hold; {'; '.join(said)}"


def check_comparable(a: SweepConfig, b: SweepConfig, names: tuple[str, str], shared_only: bool) -> None:
    """comparable(), its line (what was left out) on stderr."""
    said = comparable(a, b, names, shared_only)
    if said:
        print(said, file=sys.stderr)
