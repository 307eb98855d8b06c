"""Where the CPU goes: a sweep's sampled profile (copylab.programs.profile_reader, stored as profile.csv) summed
over trials into shares by category of function.

A share is samples of a category over all samples of its group: the trials of one configuration pooled, so that a
trial counts in proportion to its samples (each window is about as long as the next).  cpu-clock samples at a
fixed rate of CPU time, so samples divided by the rate are CPU seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from copylab.declarations import implementations
from copylab.declarations.profiling.categories import CATEGORY_NAMES
from copylab.roles import Role
from copylab.vocabulary.values import NO_LAYOUT

FIGURE = "cpu_breakdown"


def figure_name(path: str) -> str:
    """The breakdown figure's file name for a sweep whose bytes took PATH (veth, sink, network): each sweep's is
    named apart, so that a report showing two links to each by its own name."""
    return f"{FIGURE}_{path}"


# The bars of each sender, left to right: the two ends, and between them the softirq work that runs on whichever
# CPU delivered the packet.
FIGURE_SIDES = ("sender", "softirq", "receiver")
SIDE_LABELS = {"sender": "snd", "softirq": "softirq", "receiver": "rcv"}


def with_trials(profile: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """PROFILE's rows of the trials of TRIALS, with each trial's configuration."""
    keys = ["trial_id", "implementation", "workload", "size_bytes", "threads", "pinning", "receive", "layout"]
    return profile.merge(trials[keys], on="trial_id", how="inner")


def shares(profile: pd.DataFrame, trials: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Samples per group of BY (columns of trials.csv, and "side") and category, and the category's share of the
    group's samples; every category of the declared table in every group, 0 where none was sampled."""
    rows = with_trials(profile, trials)
    groups = list(by)
    counts = rows.groupby([*groups, "category"])["samples"].sum().unstack("category", fill_value=0)
    counts = counts.reindex(columns=list(CATEGORY_NAMES), fill_value=0)
    long = counts.stack().rename("samples").reset_index()
    totals = long.groupby(groups)["samples"].transform("sum")
    long["share"] = long["samples"] / totals.where(totals > 0)
    return long


def share_of(profile: pd.DataFrame, trials: pd.DataFrame, categories: Sequence[str]) -> float:
    """The share of every sample of TRIALS' windows that CATEGORIES took, every side counted; NaN without samples."""
    rows = with_trials(profile, trials)
    total = rows["samples"].sum()
    return float(rows[rows["category"].isin(categories)]["samples"].sum() / total) if total else float("nan")


def unsampled(profile: pd.DataFrame, trials: pd.DataFrame) -> list[str]:
    """The ok trials of TRIALS the profile has no row of."""
    return sorted(set(trials["trial_id"]) - set(profile["trial_id"]))


def figure_senders(present: Sequence[str]) -> list[str]:
    """The senders the breakdown figure compares, of those PRESENT: the study's three variants, and the senders
    that send a file without copying it (sendfile)."""
    study = [
        impl.name for role in (Role.TWO_COPY, Role.ONE_COPY, Role.ZERO_COPY) if (impl := implementations.by_role(role))
    ]
    uncopied_files = [
        impl.name
        for impl in implementations.registry().values()
        if impl.driver.from_file and impl.copies.at_send == 0 and not impl.reference
    ]
    return [name for name in implementations.ordered(present) if name in study + uncopied_files]


def figure_sizes(sizes: Sequence[int], wanted: Sequence[int] = ()) -> list[int]:
    """The message sizes the figure shows: WANTED (the sweep's side sizes) where measured, else the smallest, the
    middle and the largest of SIZES."""
    measured = sorted(set(sizes))
    chosen = [s for s in wanted if s in measured]
    if len(chosen) >= 2 or not measured:
        return sorted(chosen)
    return sorted({measured[0], measured[len(measured) // 2], measured[-1]})


def breakdown_figure(profile: pd.DataFrame, trials: pd.DataFrame, wanted_sizes: Sequence[int] = ()) -> Figure | None:
    """Stacked shares by category of every sample of a configuration's trials, a bar per side (sender, softirq,
    receiver) of each sender at a few message sizes: stream, receiving by copy, the study's message layout, the
    fewest threads.  None when no such trial was sampled."""
    rows = trials[(trials["workload"] == "stream") & (trials["receive"] == "copy")]
    rows = rows[rows["layout"].isin([implementations.STUDY_LAYOUT, NO_LAYOUT])]
    rows = rows[rows["threads"] == rows["threads"].min()]
    senders = figure_senders(list(rows["implementation"].unique()))
    rows = rows[rows["implementation"].isin(senders)]
    sizes = figure_sizes(list(rows["size_bytes"]), wanted_sizes)
    rows = rows[rows["size_bytes"].isin(sizes)]
    if rows.empty or with_trials(profile, rows).empty:
        return None
    found = shares(profile, rows, ["implementation", "size_bytes", "side"])
    totals = found.groupby(["implementation", "size_bytes"])["samples"].transform("sum")
    found["of_all"] = found["samples"] / totals.where(totals > 0)
    # tab20's dark shades, then its light ones: neighbours in the stack never share a hue.
    palette = plt.get_cmap("tab20")([*range(0, 20, 2), *range(1, 20, 2)])
    colors = dict(zip(CATEGORY_NAMES, palette, strict=False))
    figure, axes = plt.subplots(1, len(sizes), figsize=(3.2 * len(sizes) + 1.6, 3.6), sharey=True, squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        _stacked_bars(ax, found[found["size_bytes"] == size], senders, colors)
        ax.set_title(f"{size // 1024} KiB" if size >= 1024 else f"{size} B", fontsize=9)
    axes[0][0].set_ylabel("share of the trials' samples")
    # The legend lists the categories top down, as the bars stack them.
    handles = [Rectangle((0, 0), 1, 1, color=colors[c]) for c in reversed(CATEGORY_NAMES)]
    figure.legend(handles, list(reversed(CATEGORY_NAMES)), loc="center right", fontsize=6.5, frameon=False)
    figure.tight_layout(rect=(0, 0, 0.85, 1))
    return figure


def _stacked_bars(ax: Axes, found: pd.DataFrame, senders: Sequence[str], colors: dict[str, object]) -> None:
    """A group of FIGURE_SIDES bars per sender, each stacked by category."""
    width = 0.8 / len(FIGURE_SIDES)
    for group, sender in enumerate(senders):
        for offset, side in enumerate(FIGURE_SIDES):
            at = found[(found["implementation"] == sender) & (found["side"] == side)].set_index("category")
            bottom = 0.0
            x = group + (offset - (len(FIGURE_SIDES) - 1) / 2) * width
            for category in CATEGORY_NAMES:
                height = float(at["of_all"].get(category, 0.0)) if not at.empty else 0.0
                if height > 0:
                    ax.bar(x, height, width * 0.95, bottom=bottom, color=colors[category], linewidth=0)
                    bottom += height
    ticks = [
        g + (o - (len(FIGURE_SIDES) - 1) / 2) * width for g in range(len(senders)) for o in range(len(FIGURE_SIDES))
    ]
    ax.set_xticks(
        ticks, [f"{s} {SIDE_LABELS[side]}" for s in senders for side in FIGURE_SIDES], rotation=90, fontsize=6
    )
