"""Before ./inv report measures: one short trial of every implementation it reports, in every receive mode it reports
it in, with every byte that arrives checked against its pattern (--verify).  Nothing is measured when any byte
arrives wrong, so no report rests on an implementation that delivers the wrong bytes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from copylab.declarations.config import make_config
from copylab.error_catalogue import VERIFIED_PASS_FAILED
from copylab.measure import sweep
from copylab.measure.planning.schedule import receive_modes_of
from copylab.paths import DATA
from copylab.record.store import SweepStore
from copylab.segments import MAPPING_MTU
from copylab.vocabulary.experiment import Experiment

# Short: the pass checks bytes, it measures nothing, and it is paid from the report's budget.
PASS: dict[str, Any] = {
    "trials": 1,
    "duration_s": 0.05,
    "warmup_s": 0.02,
    "verify": True,
    "calibrate": False,
    "kernel_copies": False,
}
PASS_SIZE = 65536  # several pages and a few segments, from every layout's fields


class Wanted(NamedTuple):
    declared: Experiment
    modes: dict[str, set[str]]  # per implementation, the receive modes the report's sweeps hold it in


def _wanted(sweeps: Iterable[tuple[str, str, str]]) -> dict[str, Wanted]:
    """Per experiment, what the report's sweeps hold of it (the sink's senders over the veth: nothing arrives on
    the sink)."""
    wanted: dict[str, Wanted] = {}
    for experiment, profile, _ in sweeps:
        config = make_config("verify", profile, experiment=experiment)
        modes = wanted.setdefault(experiment, Wanted(config.declared, {})).modes
        for member in config.members.values():
            modes.setdefault(member.name, set()).update(receive_modes_of(config, member))
    return wanted


class Verified(NamedTuple):
    checked: list[str]  # "implementation receive-mode", each with every byte as sent
    sweeps: list[str]  # the sweeps that ran the pass, under data/


def verified_pass(
    sweeps: Iterable[tuple[str, str, str]], stamp: str, data_root: Path = DATA, link: dict[str, Any] | None = None
) -> Verified:
    """Runs the pass for SWEEPS ((experiment, profile, name) of the report), with the settings LINK adds (two hosts:
    copylab.study.link); returns what it checked. Raises CopylabError naming what arrived wrong."""
    checked: list[str] = []
    where: list[str] = []
    for experiment, (declared, members) in _wanted(sweeps).items():
        modes = sorted(set().union(*members.values()))
        # where a receiver maps, at the MTU whose segments carry whole pages, so the mapping path is checked too
        mapping: dict[str, Any] = {"mtu": MAPPING_MTU} if "mmap" in modes else {}
        stream: dict[str, Any] = {"sizes": [PASS_SIZE], "side_sizes": []} if declared.workload == "stream" else {}
        busy: dict[str, Any] = {"connections": [1]} if declared.axis == "connections" else {}
        config = make_config(
            f"verify-{experiment}-{stamp}",
            "quick",
            experiment=experiment,
            implementations=sorted(members),
            receive=modes,
            receive_for=sorted(name for name, theirs in members.items() if theirs - {"copy"}),
            threads=[1],
            budget_s=None,
            **(mapping | (link or {})),
            **PASS,
            workloads=[declared.workload],
            **stream,
            **busy,
        )
        result = sweep.run(config, SweepStore.under(data_root, config.name), progress=False)
        rows = SweepStore(result.directory, data_root=data_root).recorded_trials()
        wrong = rows[rows["status"] != "ok"]
        if len(wrong):
            first = wrong.iloc[0]
            raise VERIFIED_PASS_FAILED.error(
                implementation=first["implementation"],
                receive=first["receive"],
                error=first["error"],
                directory=result.directory,
            )
        checked += sorted({f"{row.implementation} {row.receive}" for row in rows.itertuples()})
        where.append(result.directory.name)
        print(f"copylab: verified pass: {len(rows)} trials, every byte as sent ({result.directory.name})")
    return Verified(checked, where)
