"""A trial's measured window: what the kernel's copy counts and the rows are bounded by."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """A trial's measured window as its client reported it."""

    begin_ns: int  # CLOCK_MONOTONIC
    end_ns: int
    pid: int  # the client process that received
    expected_bytes: int  # what its receive calls took from the sockets in the window (the bytes not mapped)
