"""The code's shape, held: no import cycle, small modules, each name declared in one place, one table of settings
that the command line, the manifest, the rows and the C programs derive from."""

from __future__ import annotations

import ast
import dataclasses
import graphlib
import json
import re
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
MAX_PYTHON_LINES = 500
MAX_C_LINES = 300


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# A module named by a string, to be loaded by name later ("copylab.x.y:NAME", or a module path for importlib): an
# import all the same.
NAMED_MODULE = re.compile(r"(copylab(?:\.\w+)+)(?::\w+)?")


def _imports(tree: ast.Module) -> Iterator[str]:
    """Every module an import statement names, deferred and type-only imports included, and every module a string
    names: a "copylab.x.y:NAME" target or a module path "copylab.x.y"."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and (named := NAMED_MODULE.fullmatch(str(node.value))):
            yield named[1]


def test_a_module_named_by_a_string_is_an_import():
    """The import graph counts what is loaded by name, so that a loop through such names cannot hide."""
    planted = ast.parse(
        "import importlib\n"
        'FIGURES = "copylab.report.sections.compose:blocks"\n'
        'REPORT = importlib.import_module("copylab.report.sections")\n'
    )
    assert {"copylab.report.sections.compose", "copylab.report.sections"} <= set(_imports(planted))


def _import_graph() -> dict[str, set[str]]:
    """Each copylab module and the copylab modules it imports."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {
            target
            for target in _imports(ast.parse(path.read_text()))
            # a package's submodule importing the package's __init__ is how Python loads it, not a cycle
            if target in modules and target != name and not name.startswith(target + ".")
        }
        for name, path in modules.items()
    }


def test_no_import_cycle_at_all():
    try:
        tuple(graphlib.TopologicalSorter(_import_graph()).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


# The packages from the bottom up: a module imports only modules of its own layer or of a layer below.  An
# experiment is declared in the vocabulary (what an experiment and an implementation are, the words and the limits),
# its declaration is plain data in copylab/experiments/NAME/ that every layer above reads through the one list of
# experiments, and what the report makes of it (its figures, answers and report parts) sits with the report, in
# copylab/report/experiments/NAME/, which the report finds by that rule.
LAYERS = (
    (
        "copylab.errors",
        "copylab.error_catalogue",
        "copylab.measured",
        "copylab.paths",
        "copylab.formatting",
        "copylab.scratch",
        "copylab.roles",
        "copylab.segments",
    ),
    ("copylab.vocabulary",),  # what an experiment and an implementation are declared with
    ("copylab.experiments",),  # the list, and each experiment's declaration
    ("copylab.declarations",),
    # the calibration is one folder in two layers: its record is a record like the manifest that holds it, its
    # measurement runs programs on an end, as copylab.programs does
    ("copylab.record", "copylab.calibration"),
    ("copylab.analysis",),
    ("copylab.programs", "copylab.calibration.measurement"),
    ("copylab.testbeds",),
    # measure by stage: running one trial, then planning the trials and probing the host (each runs on running),
    # then the sweep that goes through the three
    ("copylab.measure.running",),
    ("copylab.measure.planning", "copylab.measure.host"),
    ("copylab.measure",),
    ("copylab.report",),  # the report, and each experiment's figures and report parts (copylab.report.experiments)
    ("copylab.explore",),
    ("copylab.study", "copylab.bench"),  # ./inv report's pipeline (measure, analyse, render) and ./inv bench
    ("copylab.cli", "copylab.__main__"),
)


def _layer(module: str) -> int:
    if module == "copylab":
        return 0
    # the most precise entry decides: copylab.calibration.measurement is not where the rest of copylab.calibration is
    found = [
        (len(prefix), index)
        for index, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    if not found:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS")
    return max(found)[1]


def test_each_package_imports_only_the_layers_below_it():
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in sorted(_import_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def _room(module: str, named: frozenset[str]) -> str:
    """Where MODULE sits when the imports are drawn by folder: its folder (a package's __init__ is its own
    folder's), or itself when LAYERS places it by name (copylab/__main__.py is not the folder of copylab.errors)."""
    if module in named or (ROOT / module.replace(".", "/")).is_dir():
        return module
    return module.rpartition(".")[0]


def _folder_graph(graph: dict[str, set[str]], named: frozenset[str]) -> dict[str, set[str]]:
    """GRAPH's imports drawn by folder: an arrow from one room to another when any of its modules imports one of
    the other's."""
    drawn: dict[str, set[str]] = {}
    for module, targets in graph.items():
        room = _room(module, named)
        drawn.setdefault(room, set()).update(_room(target, named) for target in targets)
        drawn[room].discard(room)
    return drawn


def _named_modules() -> frozenset[str]:
    return frozenset(prefix for layer in LAYERS for prefix in layer if not (ROOT / prefix.replace(".", "/")).is_dir())


def test_a_circle_by_folder_is_found_where_modules_have_none():
    """Two folders importing each other through different modules: no module cycle, a folder circle."""
    graph = {
        "copylab.record.store": {"copylab.analysis.stats"},
        "copylab.analysis.stats": set(),
        "copylab.analysis.tables": {"copylab.record.manifest"},
        "copylab.record.manifest": set(),
    }
    tuple(graphlib.TopologicalSorter(graph).static_order())  # no cycle between modules
    drawn = _folder_graph(graph, frozenset())
    assert drawn == {"copylab.record": {"copylab.analysis"}, "copylab.analysis": {"copylab.record"}}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(drawn).static_order())


def test_no_import_circle_between_folders():
    drawn = _folder_graph(_import_graph(), _named_modules())
    try:
        tuple(graphlib.TopologicalSorter(drawn).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import circle by folder: {' -> '.join(error.args[1])}")


def _experiment_of(module: str) -> str | None:
    """The experiment whose declaration (copylab.experiments.NAME) or report package (copylab.report.experiments.NAME)
    holds MODULE, if one does."""
    for prefix in ("copylab.experiments.", "copylab.report.experiments."):
        if module.startswith(prefix):
            return module.removeprefix(prefix).split(".")[0]
    return None


def test_nothing_outside_an_experiments_packages_imports_them():
    """An experiment is a plug-in: the list of experiments imports its declaration, its own report package imports
    its declaration and itself, and nothing else imports either (the report finds the plug-in by a rule)."""
    leaks = [
        f"{module} imports {target}"
        for module, targets in sorted(_import_graph().items())
        for target in sorted(targets)
        if (owner := _experiment_of(target))
        and _experiment_of(module) != owner
        and not (module == "copylab.experiments" and target == f"copylab.experiments.{owner}")
    ]
    assert leaks == []


def _without_a_plugin() -> list[str]:
    """The declared experiments for which the rule (copylab.report.plugins.get) finds no plug-in of theirs."""
    from copylab.report import plugins

    missing = []
    for name in experiments.names():
        try:
            found = plugins.get(name).experiment
        except (ModuleNotFoundError, AttributeError):
            missing.append(f"{name}: no package copylab/report/experiments/{name}/ with a PLUGIN")
            continue
        if found is not experiments.get(name):
            missing.append(f"{name}: its PLUGIN holds experiment {found.name!r}")
    return missing


def test_one_list_of_experiments_and_a_report_package_for_each():
    """Adding an experiment is its declaration's package and one entry in copylab/experiments/__init__.py, and its
    report package copylab/report/experiments/NAME/ exposing PLUGIN, which the report finds by that rule."""
    declared = sorted(path.parent.name for path in PACKAGE.glob("experiments/*/__init__.py"))
    assert sorted(experiments.names()) == declared, "list its declaration in copylab/experiments/__init__.py"
    reported = sorted(path.parent.name for path in PACKAGE.glob("report/experiments/*/__init__.py"))
    assert reported == declared, "one report package per declared experiment, named after it"
    assert _without_a_plugin() == []


def test_an_experiment_declared_without_its_report_package_is_named(monkeypatch):
    planted = dataclasses.replace(experiments.main(), name="planted")
    monkeypatch.setitem(experiments.EXPERIMENTS, planted.name, planted)
    assert _without_a_plugin() == ["planted: no package copylab/report/experiments/planted/ with a PLUGIN"]


def test_no_python_module_is_over_the_cap():
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_PYTHON_LINES
    ]
    assert long == [], "split these along their concerns"


def test_no_c_file_is_over_the_cap():
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in sorted(CSRC.glob("*.c"))
        if (lines := len(path.read_text().splitlines())) > MAX_C_LINES
    ]
    assert long == [], "split these along their concerns"


MAX_MODULES_PER_FOLDER = 12
MAX_FUNCTION_LINES = 80


def test_no_folder_holds_more_than_twelve_modules():
    folders = [PACKAGE, *(path for path in PACKAGE.rglob("*") if path.is_dir() and path.name != "__pycache__")]
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in folders
        if (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}


def test_every_function_can_be_read_whole():
    long = {
        (str(path.relative_to(ROOT)), node.name)
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert long == set(), "split these along their concerns"


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


def _early_returns(tree: ast.Module) -> Iterator[int]:
    """Lines of a test function's own `return` statements (not those of functions nested in it)."""

    def own(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                yield child
                yield from own(child)

    for function in tree.body:
        if isinstance(function, ast.FunctionDef) and function.name.startswith("test_"):
            yield from (node.lineno for node in own(function) if isinstance(node, ast.Return))


def test_no_test_returns_early_as_a_pass():
    """A test whose comparison cannot be made skips with the reason (pytest.skip), or fails: a `return` in a test
    would pass it having checked nothing."""
    planted = ast.parse("def test_x(a):\n    if a:\n        return\n    def inner():\n        return 1\n    assert a\n")
    assert list(_early_returns(planted)) == [3]
    found = [
        f"{path.name}:{line}"
        for path in sorted((ROOT / "tests").glob("test_*.py"))
        for line in _early_returns(ast.parse(path.read_text()))
    ]
    assert found == [], found


def test_no_module_outside_the_registry_names_an_implementation():
    """Adding an implementation touches the registry only: no string literal elsewhere names one."""
    names = set(implementations.names())
    # each experiment lists its implementations (with their colour and paragraph); the drivers start them
    registry = {
        *PACKAGE.glob("experiments/*/implementations.py"),
        PACKAGE / "measure" / "running" / "drivers.py",
    }
    # gcc's ThreadSanitizer (--sanitize thread), not the server model
    homonyms = {("build.py", "thread"), ("table.py", "thread")}
    found = [
        f"{path.relative_to(ROOT)}:{line} {value!r}"
        for path in _project_sources()
        if path not in registry
        for line, value in _string_constants(path)
        if value in names and (path.name, value) not in homonyms
    ]
    assert found == []


def test_only_an_experiments_own_package_names_it():
    """An experiment is a plug-in: outside copylab/experiments/NAME/__init__.py, code reaches it through the
    registry."""
    found = [
        f"{path.relative_to(ROOT)}:{line} {value!r}"
        for path in _project_sources()
        for line, value in _string_constants(path)
        if value in experiments.names() and path != PACKAGE / "experiments" / value / "__init__.py"
    ]
    assert found == []


# A C function's definition: its head at the start of a line, its body's brace after the parameters.
C_DEFINITION = re.compile(
    r"^(?P<weak>__attribute__\(\(weak\)\)\s+)?(?P<static>static\s+)?[A-Za-z_][\w \t*]*?\b(?P<name>\w+)"
    r"\s*\([^;{}]*\)\s*\{",
    re.MULTILINE,
)
C_DECLARATION = re.compile(r"\b(\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*(?:__attribute__\(\(.*\)\))?\s*;")


def _c_definitions() -> dict[str, list[tuple[str, bool, bool]]]:
    """Each C function defined in csrc/*.c: (file, static, weak) per definition."""
    found: dict[str, list[tuple[str, bool, bool]]] = {}
    for path in sorted(CSRC.glob("*.c")):
        for match in C_DEFINITION.finditer(path.read_text()):
            found.setdefault(match["name"], []).append((path.name, bool(match["static"]), bool(match["weak"])))
    return found


def test_no_c_function_is_defined_in_two_files():
    """Code the programs share lives in one core file (the Makefile's CORE), not in copies that drift apart.
    Only what a header asks of every sending path (send_*.c) or waiting model (wait_*.c) is defined once per
    such file, a program linking one of them (and a weak default, which theirs replaces)."""
    definitions = _c_definitions()
    assert {"now_ns", "zc_reap", "main", "sender_create"} <= set(definitions)  # the pattern finds definitions
    interface = {name for header in CSRC.glob("*.h") for name in C_DECLARATION.findall(header.read_text())}
    assert {"sender_create", "model_serve"} <= interface
    twice = []
    for name, found in sorted(definitions.items()):
        if name == "main" or len(found) < 2:
            continue
        kinds = {file.split("_", 1)[0] for file, _, weak in found if not weak}
        one_per_program = name in interface and kinds in ({"send"}, {"wait"}) and not any(s for _, s, _ in found)
        if not one_per_program:
            twice.append(f"{name}: {', '.join(file for file, _, _ in found)}")
    assert twice == []


def test_the_c_limits_header_is_generated_from_the_settings():
    assert (CSRC / "limits.h").read_text() == settings.c_header(), (
        "run: python -m copylab.declarations.settings > csrc/limits.h"
    )


def test_the_sweep_config_class_is_generated_from_the_settings():
    assert (PACKAGE / "declarations" / "sweep_config.py").read_text() == settings.sweep_config_module(), (
        "run: python -m copylab.declarations.settings sweep_config > copylab/declarations/sweep_config.py"
    )


def test_every_program_option_of_a_setting_is_one_the_programs_take(bin_dir):
    for setting in settings.SETTINGS:
        if setting.program is None:
            continue
        drivers = [i.driver for i in implementations.registry().values()]
        for role in setting.program.roles:
            programs = {d.server for d in drivers if d.server_role == role}
            programs |= {d.client for d in drivers if d.client_role == role}
            for program in sorted(programs):
                usage = subprocess.run([str(bin_dir / program), "--help"], capture_output=True, text=True, check=True)
                assert setting.program.option in usage.stdout.split(), (setting.name, program)


# A setting nobody declared before: the test adds it to the table and generates SweepConfig again, and every place
# that derives from the table must carry it without another change.
NEW_SETTING = """
import dataclasses, json, sys, types
from copylab.declarations import settings
from copylab.vocabulary.values import Column
new = settings.Setting(
    "probe_depth", "int", 3, "a setting only this test declares", low=1, high=9,
    column=Column("probe_depth", "int", "", "a column only this test declares", since=4),
)
settings.SETTINGS = (*settings.SETTINGS, new)
settings.BY_NAME[new.name] = new
generated = sys.modules["copylab.declarations.sweep_config"] = types.ModuleType("copylab.declarations.sweep_config")
exec(settings.sweep_config_module(), generated.__dict__)
import tasks
from copylab.declarations import config
from copylab.testbeds import netns
from copylab.declarations import schema
from copylab.testbeds import testbed
from copylab.measure.running.spec import TrialSettings
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
    assert seen["help"] == "a setting only this test declares (default: 3; from 1 to 9)"  # its default and limits too
    assert seen["value"] == 7 and seen["parameters"] == 7
    assert seen["column"] and seen["row"] == 7
    assert seen["refused"] == "probe-depth: 12 is out of range (1 to 9)"


def test_the_reference_pages_are_generated_from_the_code(monkeypatch):
    from copylab.cli import reference

    assert reference.stale() == [], "regenerate them: python -m copylab.cli.reference"
    # and a changed declaration makes its page stale
    changed = dataclasses.replace(settings.SETTINGS[0], help="a help text nobody wrote before")
    monkeypatch.setattr(settings, "SETTINGS", (changed, *settings.SETTINGS[1:]))
    monkeypatch.setattr(reference, "COMMANDS", reference_commands_with(changed))
    assert "options.md" in reference.stale()


def reference_commands_with(changed: settings.Setting) -> tuple:
    """The command table with run-sweep's option for CHANGED's setting carrying its new help."""
    from copylab.cli import commands

    return tuple(
        dataclasses.replace(
            command,
            options=[
                dataclasses.replace(option, help=changed.help) if option.name == changed.parameter else option
                for option in command.options
            ],
        )
        for command in commands.COMMANDS
    )
