"""The servers experiment's implementations: one server model per way of waiting for many connections."""

from __future__ import annotations

from copylab.declarations.implementation import Copies, Implementation, model_pair
from copylab.declarations.limits import SELECT_MAX_CONNECTIONS

# The order below is the order of every table, legend and list.
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        name="iterative",
        summary="one connection at a time: accept, answer its requests until it closes, accept the next",
        driver=model_pair("iterative"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        floor=True,
    ),
    Implementation(
        name="thread",
        summary="a thread per connection, each blocked in recv() on its own connection",
        driver=model_pair("thread"),
        copies=Copies(sender_user=0, sender_kernel=1),
    ),
    Implementation(
        name="fork",
        summary="a process per connection, each blocked in recv() on its own connection",
        driver=model_pair("fork"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="select",
        summary="one thread waiting on every connection with select()",
        driver=model_pair("select"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        max_connections=SELECT_MAX_CONNECTIONS,
    ),
    Implementation(
        name="poll",
        summary="one thread waiting on every connection with poll()",
        driver=model_pair("poll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="epoll",
        summary="one thread waiting on every connection with a level-triggered epoll instance",
        driver=model_pair("epoll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="uring",
        summary="one thread driving every connection through an io_uring: multishot accept and receive",
        driver=model_pair("uring"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread", "epoll"),
    ),
)
