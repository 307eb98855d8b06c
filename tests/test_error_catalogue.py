"""Every error a user can meet is declared once, in copylab/error_catalogue.py, and raised from there;
docs/troubleshooting.md is generated from it, and the numbers it quotes are those the code prints."""

from __future__ import annotations

import ast
import re
import resource
from collections.abc import Iterable

import pytest

from copylab import error_catalogue
from copylab.cli import troubleshooting
from copylab.declarations import config
from copylab.declarations.settings import socket_buffer
from copylab.errors import CopylabError
from copylab.paths import ROOT

PACKAGE = ROOT / "copylab"
CATALOGUE = PACKAGE / "error_catalogue.py"

# Raise sites that still write a catalogued message out instead of raising it from the catalogue, by module: their
# modules were being changed by others when the catalogue came. Converting one is taking it off this list.
PENDING = {
    "copylab/declarations/config.py": {"SELECT_LIMIT", "TOO_FEW_DESCRIPTORS"},
    "copylab/declarations/settings/socket_buffer.py": {"SOCKET_BUFFER_CAPPED"},
    "copylab/measure/sweep.py": {"ALREADY_HOLDS", "NOT_WRITABLE", "NOTHING_RUNS"},
    "copylab/report/render.py": {"NOT_A_SWEEP"},
    "copylab/testbeds/congestion.py": {"CONGESTION_UNOFFERED"},
    "copylab/testbeds/sender_pages.py": {"PAGES_NEED_ROOT", "PAGES_HELD"},
    "copylab/testbeds/userns.py": {"USERNS_DISABLED", "USERNS_REFUSED"},
}


def _literal_text(node: ast.AST) -> str | None:
    """The text a string node writes out, each value filled in at run time as NUL."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "\0" for part in node.values)
    return None


LEAST_LITERAL = 20  # a string with less text of its own ("{a}: {b}") could be any message


def literal_copies(sources: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """By module (SOURCES: its name and text), the catalogued errors whose message it writes out itself: a string
    of the module that, its run-time values filled in, can be the message."""
    errors = {name: entry.message for name, entry in error_catalogue.entries().items() if entry.kind == "error"}
    templates = {
        name: re.compile(".*?".join(map(re.escape, re.split(r"\{[^}]*\}", message))), re.S)
        for name, message in errors.items()
    }
    found: dict[str, set[str]] = {}
    for module, text in sources:
        for node in ast.walk(ast.parse(text)):
            literal = _literal_text(node)
            if literal is None or len(literal.replace("\0", "")) < LEAST_LITERAL:
                continue
            pattern = re.compile(".*?".join(map(re.escape, literal.split("\0"))), re.S)
            found_here = {name for name, message in errors.items() if pattern.fullmatch(message)}
            # and the other way round: the catalogue's fields filled in with what the module writes there
            found_here |= {name for name, template in templates.items() if template.fullmatch(literal)}
            if found_here:
                found.setdefault(module, set()).update(found_here)
    return found


def _copylab_sources() -> list[tuple[str, str]]:
    return [
        (path.relative_to(ROOT).as_posix(), path.read_text())
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != CATALOGUE
    ]


def raised_entries() -> set[str]:
    """The catalogued errors some module raises from the catalogue (ENTRY.error(...)), and the notes it prints from
    there (ENTRY.text(...))."""
    used = set()
    for _, text in _copylab_sources():
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("error", "text")
                and isinstance(node.value, ast.Attribute)
            ):
                used.add(node.value.attr)
    return used & set(error_catalogue.entries())


def test_no_module_writes_out_a_catalogued_message_but_those_still_pending():
    assert literal_copies(_copylab_sources()) == PENDING


def test_a_message_written_out_again_is_found():
    planted = (
        "def f(name, pid):\n"
        '    raise ValueError(f"namespace {name} is in use by copylab process {pid}; choose other names "\n'
        '        "(or ./inv netns-down if that process is not copylab\'s)")\n'
    )
    assert literal_copies([("copylab/x.py", planted)]) == {"copylab/x.py": {"NAMESPACE_IN_USE"}}
    assert literal_copies([("copylab/x.py", 'print("namespace copylab_srv")\n')]) == {}


def test_every_catalogued_error_is_raised_somewhere():
    """An error nobody raises would be documented for nothing; pending ones are still written out where they are."""
    errors = {name for name, entry in error_catalogue.entries().items() if entry.kind == "error"}
    pending = set().union(*PENDING.values())
    shell = {"MISSING_PACKAGES"}  # printed by ./inv before Python runs (tests/test_docs.py finds it there)
    assert errors - raised_entries() - pending - shell == set()


def test_the_troubleshooting_page_is_generated_from_the_catalogue():
    assert (ROOT / "docs" / "troubleshooting.md").read_text() == troubleshooting.page(), (
        "run: python -m copylab.cli.troubleshooting > docs/troubleshooting.md"
    )


def _quoted(entry_name: str) -> str:
    entry = error_catalogue.entries()[entry_name]
    return troubleshooting.sample_line(entry_name, entry).removeprefix("copylab: error: ")


def test_the_descriptors_the_page_quotes_are_those_the_code_asks_for(monkeypatch):
    """The page's line is the code's own, numbers included: 2000 connections need 2000 plus what the code adds."""
    sample = error_catalogue.TOO_FEW_DESCRIPTORS.sample
    monkeypatch.setattr(resource, "getrlimit", lambda _: (sample["hard"], sample["hard"]))
    monkeypatch.setattr(config.os, "geteuid", lambda: 1000)
    sweep = config.make_config(
        "x", "quick", experiment="servers", connections=[sample["most"]], implementations=["epoll"]
    )
    with pytest.raises(CopylabError) as raised:
        config.check_descriptor_limit(sweep)
    assert str(raised.value) == _quoted("TOO_FEW_DESCRIPTORS")


def test_the_select_limit_the_page_quotes_is_the_code_s():
    with pytest.raises(CopylabError) as raised:
        config.make_config("x", "quick", experiment="servers", connections=[2000])
    assert str(raised.value) == _quoted("SELECT_LIMIT")


def test_the_socket_buffer_the_page_names_is_the_one_checked_first():
    sample = error_catalogue.SOCKET_BUFFER_CAPPED.sample
    caps = dict.fromkeys(socket_buffer.CAPS, sample["cap"])  # a default host: both caps alike
    assert socket_buffer.refusal(sample["asked"], caps, sample["where"]) == _quoted("SOCKET_BUFFER_CAPPED")


def test_a_number_edited_on_the_page_is_caught(monkeypatch):
    """Negative control: the page's descriptor count one off is no longer what the code prints."""
    line = _quoted("TOO_FEW_DESCRIPTORS")
    edited = line.replace(str(2000 + config.DESCRIPTORS_BESIDES_CONNECTIONS), "2016")
    assert edited != line
    monkeypatch.setattr(troubleshooting, "sample_line", lambda name, entry: "copylab: error: " + edited)
    assert (ROOT / "docs" / "troubleshooting.md").read_text() != troubleshooting.page()


# Raise sites that still write their own message instead of raising one of the catalogue, by module: the errors not
# catalogued yet (most name the option or file at fault). Cataloguing one is lowering its module's count here; a
# new raise site outside the catalogue fails the test below.
NOT_YET_CATALOGUED = {
    "copylab/analysis/analyze_sweep.py": 2,
    "copylab/analysis/notebooks.py": 2,
    "copylab/analysis/stats.py": 3,
    "copylab/analysis/two_runs.py": 3,
    "copylab/bench/comparisons.py": 1,
    "copylab/bench/goals.py": 1,
    "copylab/bench/sampling_cost.py": 2,
    "copylab/bench/spread.py": 1,
    "copylab/bench/timing.py": 2,
    "copylab/calibration/measurement.py": 2,
    "copylab/calibration/record.py": 1,
    "copylab/cli/commands.py": 7,
    "copylab/cli/hosts.py": 4,
    "copylab/cli/parsing.py": 4,
    "copylab/declarations/config.py": 45,
    "copylab/declarations/implementations.py": 2,
    "copylab/declarations/namespace_pair.py": 6,
    "copylab/declarations/sweep_config.py": 1,
    "copylab/experiments/__init__.py": 1,
    "copylab/report/experiments/copies/answers/crossovers.py": 1,
    "copylab/report/experiments/copies/figures/diagram.py": 1,
    "copylab/report/experiments/copies/basics/queries.py": 1,
    "copylab/report/plugins.py": 1,
    "copylab/explore/data.py": 1,
    "copylab/explore/serve.py": 3,
    "copylab/explore/views.py": 1,
    "copylab/formatting.py": 1,
    "copylab/measure/running/spec.py": 1,
    "copylab/measure/sweep.py": 8,
    "copylab/programs/sampler.py": 1,
    "copylab/record/manifest.py": 7,
    "copylab/record/store.py": 10,
    "copylab/record/trials_file.py": 21,
    "copylab/report/sections/compose.py": 1,
    "copylab/report/render.py": 8,
    "copylab/report/results.py": 1,
    "copylab/study/fleet.py": 11,
    "copylab/study/link.py": 3,
    "copylab/study/pipeline.py": 1,
    "copylab/study/verification.py": 1,
    "copylab/testbeds/netns.py": 1,
    "copylab/testbeds/remote.py": 10,
    "copylab/testbeds/sender_pages.py": 3,
    "copylab/testbeds/ssh.py": 5,
    "copylab/testbeds/testbed.py": 1,
    "copylab/testbeds/userns.py": 4,
}


def raise_sites(sources: Iterable[tuple[str, str]]) -> dict[str, int]:
    """By module, how many times it raises CopylabError with a message of its own."""
    counts = {}
    for module, text in sources:
        found = sum(
            1
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id == "CopylabError"
        )
        if found:
            counts[module] = found
    return counts


def test_no_new_error_is_raised_outside_the_catalogue():
    grown = {
        module: count
        for module, count in raise_sites(_copylab_sources()).items()
        if count > NOT_YET_CATALOGUED.get(module, 0)
    }
    assert grown == {}, "declare the new error in copylab/error_catalogue.py and raise it from there"


def test_a_raise_outside_the_catalogue_is_counted():
    planted = (
        'def f(x):\n    raise CopylabError(f"{x}: bad")\n\ndef g():\n    raise NOT_BUILT.error(path=1, command=2)\n'
    )
    assert raise_sites([("copylab/x.py", planted)]) == {"copylab/x.py": 1}
