"""The code's shape, held: no import cycle, small modules, each name declared in one place, one table of settings
that the command line, the manifest, the rows and the C programs derive from."""

from __future__ import annotations

import ast
import graphlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from copylab import experiments
from copylab.declarations import implementations, settings
from copylab.paths import NOTEBOOKS, ROOT

PACKAGE = ROOT / "copylab"
CSRC = ROOT / "csrc"
MAX_PYTHON_LINES = 600
MAX_C_LINES = 300


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module) -> Iterator[str]:
    """Every module an import statement names, deferred ones included; imports under TYPE_CHECKING aside."""
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_no_import_cycle_type_only_imports_aside():
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {
        name: {
            target
            for target in _runtime_imports(ast.parse(path.read_text()))
            # a package's submodule importing the package's __init__ is how Python loads it, not a cycle
            if target in modules and target != name and not name.startswith(target + ".")
        }
        for name, path in modules.items()
    }
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


def test_modules_stay_small():
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for pattern, limit in (("copylab/**/*.py", MAX_PYTHON_LINES), ("csrc/*.c", MAX_C_LINES))
        for path in sorted(ROOT.glob(pattern))
        if (lines := len(path.read_text().splitlines())) > limit
    ]
    assert long == []


def _string_constants(path: Path) -> Iterator[tuple[int, str]]:
    if path.suffix == ".ipynb":
        code = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        # IPython's magics are not Python
        python = ["\n".join(line for line in source.splitlines() if not line.startswith("%")) for source in code]
        trees = [ast.parse(source) for source in python]
    else:
        trees = [ast.parse(path.read_text())]
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node.lineno, node.value


def _project_sources() -> list[Path]:
    return [*sorted(PACKAGE.rglob("*.py")), ROOT / "tasks.py", *sorted(NOTEBOOKS.glob("*.ipynb"))]


def test_no_module_outside_the_registry_names_an_implementation():
    """Adding an implementation touches the registry only: no string literal elsewhere names one."""
    names = set(implementations.names())
    registry = {PACKAGE / "implementations.py", PACKAGE / "drivers.py"}
    # gcc's ThreadSanitizer (--sanitize thread), not the server model
    homonyms = {("build.py", "thread"), ("settings.py", "thread")}
    found = [
        f"{path.relative_to(ROOT)}:{line} {value!r}"
        for path in _project_sources()
        if path not in registry
        for line, value in _string_constants(path)
        if value in names and (path.name, value) not in homonyms
    ]
    assert found == []


def test_only_an_experiments_own_package_names_it():
    """An experiment is a plug-in: outside copylab/NAME/__init__.py, code reaches it through the registry."""
    found = [
        f"{path.relative_to(ROOT)}:{line} {value!r}"
        for path in _project_sources()
        for line, value in _string_constants(path)
        if value in experiments.names() and path != PACKAGE / value / "__init__.py"
    ]
    assert found == []


def test_the_c_limits_header_is_generated_from_the_settings():
    assert (CSRC / "limits.h").read_text() == settings.c_header(), (
        "run: python -m copylab.declarations.settings > csrc/limits.h"
    )


def test_every_program_option_of_a_setting_is_one_the_programs_take(bin_dir):
    for setting in settings.SETTINGS:
        if setting.program is None:
            continue
        experiment = setting.program.experiment
        drivers = [i.driver for i in implementations.registry().values() if experiment in (None, i.experiment)]
        for role in setting.program.roles:
            programs = {getattr(d, role) for d in drivers if hasattr(d, role)}
            for program in sorted(programs):
                usage = subprocess.run([str(bin_dir / program), "--help"], capture_output=True, text=True, check=True)
                assert setting.program.option in usage.stdout.split(), (setting.name, program)


# A setting nobody declared before: the test adds it to the table, and every place that derives from the table
# must carry it without another change.
NEW_SETTING = """
import dataclasses, json, sys
from copylab.declarations import settings
from copylab.declarations.vocabulary import Column
new = settings.Setting(
    "probe_depth", "int", 3, "a setting only this test declares", low=1, high=9,
    column=Column("probe_depth", "int", "", "a column only this test declares", since=4),
)
settings.SETTINGS = (*settings.SETTINGS, new)
settings.BY_NAME[new.name] = new
import tasks
from copylab.declarations import config
from copylab.testbeds import netns
from copylab.declarations import schema
from copylab.testbeds import testbed
from copylab.measure.spec import TrialSettings
option = tasks.run_sweep.help.get("probe-depth") or tasks.run_sweep.help.get("probe_depth")
sweep = config.make_config("x", probe_depth=7)
try:
    config.make_config("x", probe_depth=12)
    refused = ""
except Exception as error:
    refused = str(error)
json.dump({
    "help": option,
    "value": sweep.probe_depth,
    "parameters": sweep.parameters()["probe_depth"],
    "column": "probe_depth" in schema.COLUMN_NAMES,
    "row": TrialSettings(
        "x", testbed.Namespaces(netns.NamespacePair("a", "b"), "x"), None, 1.0, 0.3, values=settings.per_trial(sweep)
    ).columns().get("probe_depth"),
    "refused": refused,
}, sys.stdout)
"""


def test_a_setting_declared_once_reaches_the_command_line_config_manifest_and_rows():
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(NEW_SETTING)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout)
    assert seen["help"] == "a setting only this test declares"
    assert seen["value"] == 7 and seen["parameters"] == 7
    assert seen["column"] and seen["row"] == 7
    assert seen["refused"] == "probe-depth: 12 is out of range (1 to 9)"
