"""Every error a user can meet is declared once, in copylab/error_catalogue/, and raised from there; no module makes
a CopylabError of its own; docs/troubleshooting.md is generated from the catalogue, and the numbers it quotes are
those the code prints."""

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
CATALOGUE = PACKAGE / "error_catalogue"  # a package: its entries in modules by concern


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
    # a message with little text of its own ("{path}: {error}") would match any line: it is searched for one way only
    templates = {
        name: re.compile(".*?".join(map(re.escape, parts)), re.S)
        for name, message in errors.items()
        if len("".join(parts := re.split(r"\{[^}]*\}", message))) >= LEAST_LITERAL
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
        if not path.is_relative_to(CATALOGUE)
    ]


def raised_entries() -> set[str]:
    """The catalogued errors some module raises from the catalogue (ENTRY.error(...)), and the notes it prints from
    there (ENTRY.text(...))."""
    used = set()
    for _, text in _copylab_sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr in ("error", "text"):
                if isinstance(node.value, ast.Name):
                    used.add(node.value.id)
                elif isinstance(node.value, ast.Attribute):
                    used.add(node.value.attr)
    return used & set(error_catalogue.entries())


def test_no_module_writes_out_a_catalogued_message():
    assert literal_copies(_copylab_sources()) == {}


def test_a_message_written_out_again_is_found():
    planted = (
        "def f(name, pid):\n"
        '    raise ValueError(f"namespace {name} is in use by copylab process {pid}; choose other names "\n'
        '        "(or ./inv netns-down if that process is not copylab\'s)")\n'
    )
    assert literal_copies([("copylab/x.py", planted)]) == {"copylab/x.py": {"NAMESPACE_IN_USE"}}
    assert literal_copies([("copylab/x.py", 'print("namespace copylab_srv")\n')]) == {}


def test_every_catalogued_error_is_raised_somewhere():
    """An error nobody raises would be documented for nothing."""
    errors = {name for name, entry in error_catalogue.entries().items() if entry.kind == "error"}
    shell = {"MISSING_PACKAGES"}  # printed by ./inv before Python runs (tests/test_docs.py finds it there)
    assert errors - raised_entries() - shell == set()


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


def _error_kinds(sources: Iterable[tuple[str, str]]) -> set[str]:
    """CopylabError and the kinds of it the modules declare (class X(CopylabError)), and Line, the catalogue's
    filled-in message that becomes one."""
    kinds = {"CopylabError", "Line"}
    for _, text in sources:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id == "CopylabError" for base in node.bases
            ):
                kinds.add(node.name)
    return kinds


def made_outside_the_catalogue(sources: Iterable[tuple[str, str]]) -> dict[str, list[int]]:
    """By module, the lines where it makes a CopylabError (or a kind of it) with a message of its own instead of
    raising one of the catalogue's (ENTRY.error(...), or why.error() of a Line a function returned)."""
    sources = list(sources)
    kinds = _error_kinds(sources)
    found: dict[str, list[int]] = {}
    for module, text in sources:
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if called in kinds:
                found.setdefault(module, []).append(node.lineno)
    return found


def test_every_error_is_raised_from_the_catalogue():
    """A CopylabError carries a catalogued message; copylab's own bugs raise BrokenInvariant instead."""
    assert made_outside_the_catalogue(_copylab_sources()) == {}, (
        "declare the error in copylab/error_catalogue/ (message, cause, what to do) and raise it from there"
    )


def test_an_error_raised_outside_the_catalogue_is_caught():
    """Negative control: an inline message, of CopylabError or of a kind of it, is found; the catalogue's is not."""
    planted = (
        "class Lost(CopylabError):\n    pass\n\n"
        'def f(x):\n    raise CopylabError(f"{x}: bad")\n\n'
        'def g(x):\n    raise errors.CopylabError("no") from None\n\n'
        'def h(label):\n    raise Lost(f"{label}: gone")\n\n'
        "def k(label):\n    raise NOT_BUILT.error(path=1, command=2)\n\n"
        "def m(label):\n    raise END_LOST.error(Lost, label=label, lost=2)\n"
    )
    assert made_outside_the_catalogue([("copylab/x.py", planted)]) == {"copylab/x.py": [5, 8, 11]}


def test_a_refusal_returns_a_catalogued_line():
    """What a check returns to say why something cannot run is raised as it is: it must be a catalogue's line."""
    why = error_catalogue.SINK_REFUSED.text(why="a sink answers no request")
    assert isinstance(why, error_catalogue.Line)
    assert str(why.error()) == "path sink: a sink answers no request"
