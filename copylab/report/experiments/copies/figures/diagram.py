"""The MSG_ZEROCOPY send path, over a veth pair or between two hosts, drawn with matplotlib for the report."""

from __future__ import annotations

import math
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from copylab.errors import BrokenInvariant


@dataclass(frozen=True)
class _Path:
    lanes: dict[str, tuple[float, str]]  # lane name -> (y of the lane centre, background colour)
    steps: dict[int, tuple[int, str, str]]  # step number -> (column, lane, text)
    arrows: tuple[tuple[int, int], ...]
    copies: tuple[int, ...]  # the steps where bytes are still copied
    completion: tuple[int, ...]  # arrows into these steps belong to the completion path
    measured_step: int  # the step annotated with the measured COPIED share
    title: str


def _lanes(receiver: str) -> dict[str, tuple[float, str]]:
    return {
        "sender, user space": (3.0, "#e8f0fb"),
        "sender, kernel": (2.0, "#fdf1e3"),
        f"receiver, kernel ({receiver})": (1.0, "#fdf1e3"),
        "receiver, user space": (0.0, "#e8f0fb"),
    }


_SENDING = {
    1: (0, "sender, user space", "8 message fields\nin user buffers"),
    2: (0, "sender, kernel", "sendmsg(MSG_ZEROCOPY)\npins the user pages"),
    3: (1, "sender, kernel", "skb frags point at\nthe pinned pages\n(no copy)"),
}
# Two namespaces of one host: the send path runs right along the sender's kernel lane, down into the receiver
# (where the deferred copy happens), and the completion comes back up the last column.
_LOCAL = _Path(
    _lanes("peer namespace"),
    {
        **_SENDING,
        4: (2, "sender, kernel", "veth xmit into\nthe peer namespace"),
        5: (2, "receiver, kernel (peer namespace)", "local delivery:\nskb_orphan_frags\ncopies the pages"),
        6: (3, "receiver, kernel (peer namespace)", "pinned pages released,\ncompletion queued"),
        7: (3, "sender, kernel", "error queue entry\nSO_EE_CODE_\nZEROCOPY_COPIED"),
        8: (3, "sender, user space", "recvmsg(MSG_ERRQUEUE):\nbuffer reusable"),
        9: (2, "receiver, user space", "recv(): kernel-to-user\ncopy as usual"),
    },
    ((1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (5, 9)),
    (5, 9),
    (6, 7, 8),
    7,
    "MSG_ZEROCOPY over a veth pair: pinned pages, a deferred copy on local delivery,\n"
    "completions on the error queue (red: bytes copied; dashed: completion path)",
)
# Two hosts: the NIC reads the pinned pages itself; the sender's completion comes once the data is acknowledged.
_NETWORK = _Path(
    _lanes("other host"),
    {
        **_SENDING,
        4: (2, "sender, kernel", "the NIC reads the\npinned pages by DMA\n(copied if it cannot)"),
        5: (2, "receiver, kernel (other host)", "received from\nthe wire"),
        6: (3, "sender, kernel", "acknowledged: pages\nreleased, completion\nqueued (COPIED flag?)"),
        7: (3, "sender, user space", "recvmsg(MSG_ERRQUEUE):\nbuffer reusable"),
        8: (2, "receiver, user space", "recv(): kernel-to-user\ncopy as usual"),
    },
    ((1, 2), (2, 3), (3, 4), (4, 5), (4, 6), (6, 7), (5, 8)),
    (8,),
    (6, 7),
    6,
    "MSG_ZEROCOPY between two hosts: pinned pages read by the NIC, completions on\n"
    "the error queue once the data is acknowledged (red: bytes copied; dashed: completion path)",
)
_COLUMN_W, _BOX_W, _BOX_H = 2.0, 1.7, 0.62


def _box(path: _Path, step: int) -> tuple[float, float]:
    column, lane, _ = path.steps[step]
    return column * _COLUMN_W + _COLUMN_W / 2, path.lanes[lane][0]


def _ends(path: _Path, start: int, end: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Arrow end points on the facing box edges: horizontal within a lane, vertical within a column."""
    (x0, y0), (x1, y1) = _box(path, start), _box(path, end)
    if y0 == y1:
        side = _BOX_W / 2 if x1 > x0 else -_BOX_W / 2
        return (x0 + side, y0), (x1 - side, y1)
    side = _BOX_H / 2 if y1 > y0 else -_BOX_H / 2
    return (x0, y0 + side), (x1, y1 - side)


def zerocopy_path_figure(copied_fraction: float | None = None, between_hosts: bool = False) -> Figure:
    """The zero-copy send path (over veth, or BETWEEN_HOSTS); annotated with the measured COPIED share if given."""
    if copied_fraction is not None and not (math.isfinite(copied_fraction) and 0.0 <= copied_fraction <= 1.0):
        raise BrokenInvariant(f"copied fraction must be within 0..1, got {copied_fraction}")
    path = _NETWORK if between_hosts else _LOCAL
    width = 4 * _COLUMN_W
    # Not a pyplot figure: it works under any backend and is never left open.
    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    for name, (y, colour) in path.lanes.items():
        ax.add_patch(FancyBboxPatch((0, y - 0.48), width, 0.96, boxstyle="square,pad=0", fc=colour, ec="none"))
        ax.text(0.05, y + 0.47, name, fontsize=7.5, style="italic", va="top", color="#555555")
    for step, (_, _, text) in path.steps.items():
        x, y = _box(path, step)
        if step == path.measured_step and copied_fraction is not None:
            text += f"\nmeasured: {copied_fraction:.1%} of sends"
        copies = step in path.copies
        ax.add_patch(
            FancyBboxPatch(
                (x - _BOX_W / 2, y - _BOX_H / 2),
                _BOX_W,
                _BOX_H,
                boxstyle="round,pad=0.02",
                fc="#fbe0e0" if copies else "white",
                ec="#c0392b" if copies else "#333333",
            )
        )
        ax.text(x, y - 0.02, text, ha="center", va="center", fontsize=8)
        ax.text(x - _BOX_W / 2 + 0.05, y + _BOX_H / 2 - 0.04, str(step), fontsize=8, weight="bold", va="top")
    for start, end in path.arrows:
        tail, head = _ends(path, start, end)
        ax.add_patch(
            FancyArrowPatch(
                tail,
                head,
                arrowstyle="-|>",
                mutation_scale=12,
                shrinkA=0,
                shrinkB=0,
                color="#c0392b" if end in path.copies else "#333333",
                linestyle="--" if end in path.completion else "-",
            )
        )
    ax.set_xlim(-0.05, width + 0.05)
    ax.set_ylim(-0.52, 3.52)
    ax.axis("off")
    ax.set_title(path.title, fontsize=9)
    fig.tight_layout()
    return fig
