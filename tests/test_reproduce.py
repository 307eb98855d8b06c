"""The report's "measure this sweep again" command runs as printed and plans the sweep's configurations."""

from __future__ import annotations

import shlex
from types import SimpleNamespace
from typing import Any

import pytest

from copylab.cli import commands, main
from copylab.declarations import implementations as registry
from copylab.declarations.config import make_config
from copylab.measure import schedule
from copylab.paths import REFERENCE_DATA
from copylab.record.store import SweepStore
from copylab.report import sections

# run-sweep's own options, which are not settings of the sweep
OWN = ("command", "name", "profile", "sweep_file", "resume", "analyze")


def _command(sweep: Any) -> list[str]:
    """The printed command's words after ./inv run-sweep, read back from the report's text as a shell would."""
    text = sections.reproduce(sweep)
    line = next(part for part in text.replace("\\\n", " ").splitlines() if part.startswith("./inv run-sweep"))
    return shlex.split(line)[2:]


def _planned(words: list[str]) -> Any:
    """The sweep configuration run-sweep makes of WORDS, through copylab's own command-line parser."""
    given = vars(main.parser().parse_args(["run-sweep", *words]))
    name, profile = given["name"], given["profile"]
    options = {key: value for key, value in given.items() if key not in OWN}
    return make_config(name, profile, None, **commands._sweep_overrides(options))


def _as_sweep(config: Any, profile: str) -> Any:
    return SimpleNamespace(
        name=config.name,
        manifest=SimpleNamespace(parameters=config, profile=profile, git=SimpleNamespace(commit="abc", dirty=False)),
        store=SimpleNamespace(directory=REFERENCE_DATA),
    )


def _settings(config: Any) -> dict[str, Any]:
    return {key: value for key, value in config.parameters().items() if key not in sections.NOT_REPEATED}


def test_the_reference_command_plans_exactly_the_configurations_its_trials_ran():
    trials, manifest = SweepStore(REFERENCE_DATA).load()
    sweep = _as_sweep(manifest.parameters, manifest.profile)
    sweep.name = "reference"
    config = _planned(_command(sweep))
    assert config.name == "reference-again"  # run-sweep refuses to write into an existing sweep
    # the reference predates fixed layouts: it recorded iperf3's (which holds no fields) as the study's
    trials["layout"] = [
        registry.fixed_layout(i) or layout for i, layout in zip(trials["implementation"], trials["layout"], strict=True)
    ]
    ran = set(trials[list(schedule.Configuration._fields)].itertuples(index=False, name=None))
    assert {tuple(c) for c in schedule.configurations(config)} == ran
    assert {k: v for k, v in _settings(config).items() if k != "congestion_control"} == {
        k: v for k, v in _settings(manifest.parameters).items() if k != "congestion_control"
    }  # the reference predates the setting: it recorded none, and the command leaves it to today's default


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_a_profiles_command_keeps_its_budget_and_its_layout_and_receive_arms(profile):
    original = make_config("arms", profile)
    words = _command(_as_sweep(original, profile))
    config = _planned(words)
    assert _settings(config) == _settings(original)
    assert schedule.configurations(config) == schedule.configurations(original)
    if original.budget_s is not None:
        assert f"--budget {original.budget_s}" in " ".join(words)
