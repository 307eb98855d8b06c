"""The servers experiment's implementations: one server model per way of waiting for many connections."""

from __future__ import annotations

from copylab.declarations.implementation import Copies, Implementation, model_pair
from copylab.declarations.limits import SELECT_MAX_CONNECTIONS

# The order below is the order of every table, legend and list.
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        name="iterative",
        driver=model_pair("iterative"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        floor=True,
    ),
    Implementation(
        name="thread",
        driver=model_pair("thread"),
        copies=Copies(sender_user=0, sender_kernel=1),
    ),
    Implementation(
        name="fork",
        driver=model_pair("fork"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="select",
        driver=model_pair("select"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
        max_connections=SELECT_MAX_CONNECTIONS,
    ),
    Implementation(
        name="poll",
        driver=model_pair("poll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="epoll",
        driver=model_pair("epoll"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread",),
    ),
    Implementation(
        name="uring",
        driver=model_pair("uring"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("thread", "epoll"),
    ),
)
