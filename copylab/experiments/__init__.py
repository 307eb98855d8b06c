"""The experiments copylab runs, in the order a report presents them: the one place that lists them."""

from __future__ import annotations

from copylab.error_catalogue import UNKNOWN_CHOICE
from copylab.experiments.copies import COPIES
from copylab.experiments.servers import SERVERS
from copylab.vocabulary.experiment import Experiment

EXPERIMENTS: dict[str, Experiment] = {experiment.name: experiment for experiment in (COPIES, SERVERS)}
DEFAULT = next(iter(EXPERIMENTS.values()))


def get(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise UNKNOWN_CHOICE.error(label="experiment", value=name, choices=", ".join(EXPERIMENTS)) from None


def names() -> tuple[str, ...]:
    return tuple(EXPERIMENTS)


def main() -> Experiment:
    """The experiment a report's study parts describe."""
    return next(experiment for experiment in EXPERIMENTS.values() if experiment.main)


def reported() -> list[tuple[Experiment, str]]:
    """(experiment, profile) of every sweep `./inv report` runs, in order: each experiment's declared `reported`
    profiles, the main experiment's first."""
    ordered = sorted(EXPERIMENTS.values(), key=lambda experiment: not experiment.main)
    return [(experiment, profile) for experiment in ordered for profile in experiment.reported]
