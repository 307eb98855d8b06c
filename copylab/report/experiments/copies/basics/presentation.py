"""How the report presents the copies experiment's receive modes: each one's colour in every figure and its
paragraph in Part A (where the copies happen).  A receive mode without both fails tests/test_registry.py.  An
implementation's colour and paragraph are declared with it (copylab/experiments/copies/implementations.py)."""

from __future__ import annotations

# Markdown paragraph of Part A, per receive mode (copylab.vocabulary.implementation.RECEIVE_MODES).
RECEIVE_EXPLANATIONS: dict[str, str] = {
    "copy": (
        "**Receive `copy`.** The client's `recv()` copies the data from the socket buffers into its own "
        "buffer: the receiver's copy, made by the receiving kernel for every byte."
    ),
    "truncate": (
        "**Receive `truncate`.** `recv(MSG_TRUNC)` on TCP consumes the data without copying it to user space: "
        "the receiver's copy disappears, so comparing `truncate` with `copy` for the same sender measures what "
        "that copy costs. (With `--verify` the bytes are first read with `MSG_PEEK`, a copy, to check them.)"
    ),
    "mmap": (
        "**Receive `mmap`.** `TCP_ZEROCOPY_RECEIVE` maps whole payload pages into a region the client mapped "
        "on the socket instead of copying them; only page-aligned, page-sized payload can be mapped, the rest "
        "is still read with `recv()`. The trials count both (`rx_mapped_bytes`, `rx_copied_bytes`): whether "
        "anything maps depends on how the sender built its packets and on the MTU."
    ),
}

RECEIVE_COLORS: dict[str, str] = {
    "copy": "#333333",
    "truncate": "#e69f00",
    "mmap": "#0072b2",
}
