"""How the report presents the servers experiment's models: each one's colour in every figure and its paragraph in
the introduction.  A model without both fails tests/test_registry.py."""

from __future__ import annotations

import seaborn

from copylab.declarations.limits import SELECT_MAX_CONNECTIONS

# Markdown paragraph of the introduction, per model.
EXPLANATIONS: dict[str, str] = {
    "iterative": (
        "**iterative.** The server accepts one connection and answers its requests until the client closes "
        "it, then accepts the next. Clients that keep their connections open are served one at a time: the "
        "first is served, the others wait in the accept queue."
    ),
    "thread": (
        "**thread.** A thread per connection, each blocked in `recv()` on its connection: the scheduler wakes "
        "whichever has a request. Each connection costs a thread (a stack, a scheduling entity) and a wake-up "
        "and a context switch per request."
    ),
    "fork": (
        "**fork.** A process per connection: like a thread per connection, with an address space of its own "
        "(copy-on-write pages, a process switch rather than a thread switch)."
    ),
    "select": (
        "**select.** One thread waits on every connection with `select()`: the descriptor sets are rebuilt, "
        "copied into the kernel and scanned whole on every call, and hold only descriptors below FD_SETSIZE "
        f"(1024), so a select server holds at most {SELECT_MAX_CONNECTIONS} connections here."
    ),
    "poll": (
        "**poll.** One thread waits with `poll()`: no limit of its own on descriptors, but the whole array "
        "goes to the kernel and back, and is scanned, on every call."
    ),
    "epoll": (
        "**epoll.** One thread waits with a level-triggered `epoll` instance: the kernel keeps the interest "
        "list and returns only the connections that are ready, so a call costs in proportion to the ready "
        "connections, not to all of them."
    ),
    "uring": (
        "**uring.** One thread drives every connection through one `io_uring`. A multishot accept takes "
        "the connections, and a multishot receive per connection lands its requests in buffers the kernel "
        "picks from a provided buffer ring. The responses go out as sends on the same ring, so one "
        "`io_uring_enter()` serves many connections and no call waits on one. Published measurements of "
        "such servers disagree on whether it is ahead of epoll or behind; the comparison below is this "
        "host's, with intervals. It needs a kernel with multishot receive (6.0 on); elsewhere it is "
        "reported unavailable with the reason."
    ),
}

# Each model's colour in every figure: matplotlib's tab10, ten colours a reader tells apart, one each.
TAB10 = seaborn.color_palette("tab10").as_hex()
COLORS: dict[str, str] = {
    "iterative": TAB10[7],
    "thread": TAB10[0],
    "fork": TAB10[1],
    "select": TAB10[2],
    "poll": TAB10[3],
    "epoll": TAB10[4],
    "uring": TAB10[5],
}
