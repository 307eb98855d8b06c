"""The report's "measure this sweep again" command runs as printed and plans the sweep's configurations."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from copylab.cli import commands, main
from copylab.declarations.config import make_config
from copylab.measure.planning import schedule
from copylab.paths import DATA, FIGURES, REFERENCE_DATA, REFERENCE_MMAP_DATA, ROOT
from copylab.record.store import SweepStore
from copylab.report import sections
from copylab.report.sections import reproduction as reproduce_section
from tests.conftest import needs_root

# run-sweep's own options, which are not settings of the sweep
OWN = ("command", "name", "profile", "sweep_file", "resume", "analyze")


def _command(sweep: Any) -> list[str]:
    """The printed command's words after ./inv run-sweep, read back from the report's text as a shell would."""
    text = sections.reproduce(sweep)
    # as a shell joins lines: a backslash before a line's end is removed with it, so a word cut after a comma
    # continues on the next line, and spaces still part the words
    line = next(part for part in text.replace("\\\n", "").splitlines() if part.startswith("./inv run-sweep"))
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
    return {key: value for key, value in config.parameters().items() if key not in reproduce_section.NOT_REPEATED}


def test_the_reference_command_plans_exactly_the_configurations_its_trials_ran():
    trials, manifest = SweepStore(REFERENCE_DATA).load()
    sweep = _as_sweep(manifest.parameters, manifest.profile)
    sweep.name = "reference"
    config = _planned(_command(sweep))
    assert config.name == "reference-again"  # run-sweep refuses to write into an existing sweep
    ran = set(trials[list(schedule.Configuration._fields)].itertuples(index=False, name=None))
    assert {tuple(c) for c in schedule.configurations(config)} == ran
    assert _settings(config) == _settings(manifest.parameters)


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_a_profiles_command_keeps_its_budget_and_its_layout_and_receive_arms(profile):
    original = make_config("arms", profile)
    words = _command(_as_sweep(original, profile))
    config = _planned(words)
    assert _settings(config) == _settings(original)
    assert schedule.configurations(config) == schedule.configurations(original)
    if original.budget_s is not None:
        assert f"--budget {original.budget_s}" in " ".join(words)


def _configurations(trials: Any) -> set[tuple[Any, ...]]:
    return set(trials[list(schedule.Configuration._fields)].itertuples(index=False, name=None))


@needs_root
def test_the_printed_command_run_at_a_tiny_scale_measures_the_same_configurations():
    """The mmap reference's command, run as printed with options appended that shrink each trial (and a name and
    namespaces of this test's own), measures that reference's configurations again, no more and no fewer."""
    trials, manifest = SweepStore(REFERENCE_MMAP_DATA).load()
    sweep = _as_sweep(manifest.parameters, manifest.profile)
    sweep.name = REFERENCE_MMAP_DATA.name
    tag = os.getpid() % 100000
    name = f"reproduce-{tag}"
    tiny = ["--trials", "1", "--duration", "0.05", "--warmup", "0.02", "--no-analyze", "--no-kernel-copies"]
    own = ["--name", name, "--namespaces", f"clrep{tag}_s,clrep{tag}_c"]
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "copylab", "run-sweep", *_command(sweep), *tiny, *own],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        again = SweepStore(DATA / name).load()[0]
        assert (again["status"] == "ok").all() and _configurations(again) == _configurations(trials)
    finally:
        shutil.rmtree(DATA / name, ignore_errors=True)
        shutil.rmtree(FIGURES / name, ignore_errors=True)
