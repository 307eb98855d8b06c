"""The command line: `python -m copylab`, the `copylab` script and ./inv's tasks are one table of commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tasks
from copylab.cli.commands import COMMANDS
from copylab.paths import ROOT


def _help(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=60, cwd="/")


def test_python_m_copylab_lists_every_task_from_any_directory():
    result = _help(sys.executable, "-m", "copylab")
    assert result.returncode == 0, result.stderr
    for command in COMMANDS:
        assert f"    {command.name}" in result.stdout


def test_the_console_script_is_the_same_command_line():
    script = Path(sys.executable).parent / "copylab"
    if not script.exists():
        found = shutil.which("copylab")
        if found is None:
            pytest.skip("no copylab script on this environment's PATH (the package is not installed as a script)")
        script = Path(found)
    assert _help(str(script)).stdout == _help(sys.executable, "-m", "copylab").stdout.replace(
        "usage: __main__.py", "usage: copylab"
    )


def test_invoke_has_exactly_the_same_tasks_and_options():
    assert set(tasks.namespace.task_names) == {command.name for command in COMMANDS}
    for command in COMMANDS:
        task = tasks.namespace.tasks[command.name]
        assert {argument.name for argument in task.get_arguments()} == {option.name for option in command.options}, (
            command.name
        )


def test_every_run_sweep_option_is_a_setting_or_its_own():
    options = {argument.name for argument in tasks.run_sweep.get_arguments()}
    assert {"name", "profile", "sweep_file", "resume", "analyze", "sizes", "implementations", "models"} <= options


@pytest.mark.parametrize(
    "arguments",
    [
        ["run-sweep", "--name", "x", "--sizes", "1,,2"],
        ["run-sweep", "--name", "x", "--trials", "many"],
        ["explore", "--data", "."],  # a directory, but no sweep: no server starts
        ["explore", "--data", "nowhere"],
        ["explore", "--port", "70000"],
        ["lab", "--data", "."],
    ],
)
def test_bad_input_is_one_line_and_status_2_in_both_front_ends(arguments, tmp_path):
    for front in ([sys.executable, "-m", "copylab"], [sys.executable, "-m", "invoke", "--search-root", str(ROOT)]):
        result = subprocess.run([*front, *arguments], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 2, (front, result.stderr)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("copylab: error: "), result.stderr
    assert list(tmp_path.iterdir()) == []
