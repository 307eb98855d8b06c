"""The registry: every implementation copylab can measure, and everything the rest of copylab needs to know of it.

An implementation declares (copylab.vocabulary.implementation) how its two ends are started and read (its
driver's spec), which optional trials.csv columns it fills, how many times each payload byte is copied on its path,
the baselines it is compared with and its goal in ./inv bench.  Each experiment lists its own
(copylab.experiments.NAME.implementations, held by its declaration); this module collects them once, on first use,
in the experiments' order.  How the report presents one, its colour and its paragraph, is the report's: its
experiment's copylab.experiments.NAME.presentation.  Adding one is a C file in csrc/ (or, for an external tool, a
runner in copylab.measure.running.drivers), one entry in its experiment's list, its colour and paragraph, and its
tests; no other module names an implementation.

The receiver's side has its own small registry, copylab.vocabulary.implementation.RECEIVE_MODES: how the client
takes the bytes in.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

from copylab import experiments
from copylab.error_catalogue import BAD_PAIRS, UNKNOWN_IMPLEMENTATION, UNKNOWN_RECEIVE_MODE
from copylab.roles import STUDY_BASELINE, Role
from copylab.vocabulary.experiment import Experiment
from copylab.vocabulary.implementation import RECEIVE_MODES, Implementation
from copylab.vocabulary.values import LAYOUTS, NO_LAYOUT

BASELINE_RECEIVE = "copy"


@functools.cache
def registry() -> dict[str, Implementation]:
    """Every implementation by name, each experiment's in its own order, the experiments in theirs."""
    return {
        implementation.name: dataclasses.replace(implementation, experiment=experiment.name)
        for experiment in experiments.EXPERIMENTS.values()
        for implementation in experiment.implementations
    }


def get(name: str) -> Implementation:
    """The registry entry of NAME; a one-line error naming the known ones otherwise."""
    try:
        return registry()[name]
    except KeyError:
        raise UNKNOWN_IMPLEMENTATION.error(name=name, choices=", ".join(registry())) from None


def names(experiment: str | None = None) -> tuple[str, ...]:
    """Every implementation, or those of one experiment."""
    return tuple(name for name, impl in registry().items() if experiment in (None, impl.experiment))


def experiment(name: str) -> Experiment:
    """The experiment NAME (copylab.experiments), one-line error for an unknown one."""
    return experiments.get(name)


def deciding_pairs(experiment: Experiment) -> list[tuple[str, str]]:
    """The (challenger, baseline) pairs whose curves answer EXPERIMENT's question: the study's variants against its
    baseline variant (deciding "roles"), or every implementation against its baselines ("baselines")."""
    members = [registry()[name] for name in names(experiment.name)]
    if experiment.deciding == "roles":
        baseline = next(impl.name for impl in members if impl.role == STUDY_BASELINE)
        return [(impl.name, baseline) for impl in members if impl.role and impl.name != baseline]
    return [(impl.name, base) for impl in members for base in impl.baselines]


def ordered(present: Iterable[str]) -> list[str]:
    """PRESENT in registry order (names the registry no longer has last, sorted)."""
    present = set(present)
    return [name for name in registry() if name in present] + sorted(present - set(registry()))


def by_role(role: Role) -> Implementation | None:
    """The implementation that plays one of the study's variants."""
    return next((impl for impl in registry().values() if impl.role == role), None)


def baseline_of(experiment: Experiment) -> Implementation:
    """The baseline most implementations of EXPERIMENT are compared with (copies: the study's two-copy variant)."""
    declared = experiment.implementations
    named = [b for implementation in declared for b in implementation.baselines]
    if not named:
        return declared[0]
    shared = max(dict.fromkeys(named), key=named.count)
    return next(implementation for implementation in declared if implementation.name == shared)


# The study's own layout: its 8 fields, each allocated apart.
STUDY_LAYOUT = LAYOUTS[0]


# Joins an implementation and a layout other than the study's in a contender's label.
LAYOUT_MARK = "@"


def fixed_layout(name: str) -> str | None:
    """The layout NAME always runs in when its layout cannot be chosen (Implementation.fixed_layout)."""
    return get(name).fixed_layout


def contender(implementation: str, receive: str, layout: str = STUDY_LAYOUT) -> str:
    """What a comparison calls one implementation with one receive mode and message layout: 'two_copy',
    'two_copy/truncate', 'one_copy@contiguous' (the study's layout, or none to choose, is left unsaid)."""
    name = implementation if layout in (STUDY_LAYOUT, NO_LAYOUT) else f"{implementation}{LAYOUT_MARK}{layout}"
    return name if receive == BASELINE_RECEIVE else f"{name}/{receive}"


def contender_name(label: str) -> str:
    """The name of the implementation a contender label names ('one_copy' in 'one_copy@contiguous/truncate')."""
    return label.partition("/")[0].partition(LAYOUT_MARK)[0]


def parse_contender(label: str) -> tuple[Implementation, str]:
    """The implementation and receive mode a contender label names; a one-line error for a foreign one."""
    name, receive = contender_name(label), label.partition("/")[2] or BASELINE_RECEIVE
    if receive not in RECEIVE_MODES:
        raise UNKNOWN_RECEIVE_MODE.error(receive=receive, label=label, choices=", ".join(RECEIVE_MODES))
    return get(name), receive


def contender_pairs(given: Iterable[Iterable[str]]) -> list[tuple[str, str]]:
    """GIVEN as (challenger, baseline) contender labels, each checked against the registry: a one-line error for a
    pair that is not two labels or names an implementation or receive mode there is not."""
    pairs = [tuple(pair) for pair in given]
    if any(len(pair) != 2 for pair in pairs):
        raise BAD_PAIRS.error()
    for label in {label for pair in pairs for label in pair}:
        parse_contender(label)
    return [(challenger, baseline) for challenger, baseline in pairs]


def in_study(name: str) -> bool:
    """One of the study's variants or a reference tool: what the report's Parts D and E are about."""
    return get(name).in_study


def comparison_pairs(receive_modes: Iterable[str] = (BASELINE_RECEIVE,)) -> list[tuple[str, str]]:
    """(challenger, baseline) contenders: each implementation against its baselines in every receive mode, and
    each implementation in every other receive mode against itself receiving by copy."""
    modes = [mode for mode in RECEIVE_MODES if mode in set(receive_modes)]
    pairs = [
        (contender(impl.name, mode), contender(baseline, mode))
        for mode in modes
        for impl in registry().values()
        for baseline in impl.baselines
    ]
    pairs += [(contender(name, mode), name) for mode in modes if mode != BASELINE_RECEIVE for name in registry()]
    pairs += [
        (contender(impl.name, BASELINE_RECEIVE, layout), impl.name)
        for impl in registry().values()
        if fixed_layout(impl.name) is None
        for layout in impl.driver.layouts
        if layout != STUDY_LAYOUT
    ]
    return pairs


def programs(members: Iterable[Implementation]) -> list[str]:
    """The csrc/ programs the given implementations run."""
    return [program for implementation in members for program in implementation.driver.programs]


def uses_zero_copy(name: str) -> bool:
    """Whether NAME's sends are zero-copy sends whose completions it counts (the zc_* columns)."""
    return get(name).zero_copy
