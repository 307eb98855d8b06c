"""The servers experiment's implementations: one server model per way of waiting for many connections."""

from __future__ import annotations

from copylab.vocabulary.implementation import TAB10, Copies, Implementation, model_pair
from copylab.vocabulary.limits import SELECT_MAX_CONNECTIONS

# The order below is the order of every table, legend and list.
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        name="iterative",
        color=TAB10[7],
        explanation=(
            "**iterative.** The server accepts one connection and answers its requests until the client closes "
            "it, then accepts the next. Clients that keep their connections open are served one at a time: the "
            "first is served, the others wait in the accept queue."
        ),
        driver=model_pair("iterative"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        floor=True,
    ),
    Implementation(
        name="thread",
        color=TAB10[0],
        explanation=(
            "**thread.** A thread per connection, each blocked in `recv()` on its connection: the scheduler wakes "
            "whichever has a request. Each connection costs a thread (a stack, a scheduling entity) and a wake-up "
            "and a context switch per request."
        ),
        driver=model_pair("thread"),
        copies=Copies(sender_user=0, sender_kernel=1),
    ),
    Implementation(
        name="fork",
        color=TAB10[1],
        explanation=(
            "**fork.** A process per connection: like a thread per connection, with an address space of its own "
            "(copy-on-write pages, a process switch rather than a thread switch)."
        ),
        driver=model_pair("fork"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="select",
        color=TAB10[2],
        explanation=(
            "**select.** One thread waits on every connection with `select()`: the descriptor sets are rebuilt, "
            "copied into the kernel and scanned whole on every call, and hold only descriptors below FD_SETSIZE "
            f"(1024), so a select server holds at most {SELECT_MAX_CONNECTIONS} connections here."
        ),
        driver=model_pair("select"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        max_connections=SELECT_MAX_CONNECTIONS,
    ),
    Implementation(
        name="poll",
        color=TAB10[3],
        explanation=(
            "**poll.** One thread waits with `poll()`: no limit of its own on descriptors, but the whole array "
            "goes to the kernel and back, and is scanned, on every call."
        ),
        driver=model_pair("poll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="epoll",
        color=TAB10[4],
        explanation=(
            "**epoll.** One thread waits with a level-triggered `epoll` instance: the kernel keeps the interest "
            "list and returns only the connections that are ready, so a call costs in proportion to the ready "
            "connections, not to all of them."
        ),
        driver=model_pair("epoll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="uring",
        color=TAB10[5],
        explanation=(
            "**uring.** One thread drives every connection through one `io_uring`. A multishot accept takes "
            "the connections, and a multishot receive per connection lands its requests in buffers the kernel "
            "picks from a provided buffer ring. The responses go out as sends on the same ring, so one "
            "`io_uring_enter()` serves many connections and no call waits on one. Published measurements of "
            "such servers disagree on whether it is ahead of epoll or behind; the comparison below is this "
            "host's, with intervals. It needs a kernel with multishot receive (6.0 on); elsewhere it is "
            "reported unavailable with the reason."
        ),
        driver=model_pair("uring"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread", "epoll"),
    ),
)
