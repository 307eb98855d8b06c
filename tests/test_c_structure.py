"""The C programs' shape: no circle between their files.

A file of csrc/ depends on another when it includes it (a header), when its code calls a function or reads a
variable that only the other defines (a .c file: read from the compiled objects' symbols), or, for a header, when
the code of its inline functions does.  What every sending path (send_*.c) or waiting model (wait_*.c) defines, one
per program, is the programs' plug-in interface, defined in many files: no one file is depended on through it.
Drawn that way the files must have no circle: each concern can be read, and changed, without the ones above it."""

from __future__ import annotations

import graphlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from copylab.declarations import contract
from copylab.paths import CSRC, build_dir
from copylab.vocabulary.implementation import program_pair
from tests.test_contract import _run

INCLUDE = re.compile(r'^#include "([\w.]+)"', re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
# nm's letters for what an object defines: code, data, read-only data, zeroed data, and weak symbols
DEFINED = set("TDRBVW")


def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    """What the object OBJ defines and what it leaves to others (nm)."""
    listed = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in listed.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "U":
            undefined.add(fields[1])
        elif len(fields) == 3 and fields[1] in DEFINED:
            defined.add(fields[2])
    return defined, undefined


def _inline_calls(header: Path, scratch: Path) -> set[str]:
    """What the code of HEADER's own inline functions calls or reads outside it: the header compiled alone with
    its inline and static functions kept, and of what the object leaves undefined, the names HEADER's text holds
    (the rest comes from the headers it includes)."""
    obj = scratch / f"{header.name}.o"
    subprocess.run(
        ["gcc", "-std=c11", "-D_GNU_SOURCE", "-O0", "-fkeep-inline-functions", "-fkeep-static-functions",
         "-I", str(header.parent), "-c", "-x", "c", str(header), "-o", str(obj)],
        check=True, capture_output=True,
    )  # fmt: skip
    own = set(re.findall(r"\w+", COMMENT.sub("", header.read_text())))
    return _symbols(obj)[1] & own


def file_graph(sources: Path, objects: Path, scratch: Path) -> dict[str, set[str]]:
    """Each file of SOURCES (.c and .h) and the files of SOURCES it depends on; OBJECTS holds each .c compiled."""
    graph = {path.name: set(INCLUDE.findall(path.read_text())) for path in sorted(sources.glob("*.[ch]"))}
    defined_by: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for source in sorted(sources.glob("*.c")):
        obj = objects / f"{source.stem}.o"
        assert obj.exists(), f"{obj} is not built: does a program of the Makefile link {source.name}?"
        defined, uses[source.name] = _symbols(obj)
        for name in defined:
            defined_by.setdefault(name, set()).add(source.name)
    for header in sorted(sources.glob("*.h")):
        uses[header.name] = _inline_calls(header, scratch)
    for user, names in uses.items():
        for name in names:
            definers = defined_by.get(name, set())
            if len(definers) == 1 and user not in definers:  # several: a plug-in interface; none: a library's
                graph[user].add(next(iter(definers)))
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of GRAPH, as the files along it; empty when it has none."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return []


PLANTED = {
    "count.h": "#include <stdint.h>\nuint64_t limit(void);\n"
    "static inline uint64_t wrapped(uint64_t n) { return n % limit(); }\n",
    "count.c": '#include "count.h"\nuint64_t limit(void) { return 8; }\n',
    "user.c": '#include "count.h"\nuint64_t user(uint64_t n) { return wrapped(n); }\n',
    "ping.c": "void pong(int n);\nvoid ping(int n) { if (n) pong(n - 1); }\n",
    "pong.c": "void ping(int n);\nvoid pong(int n) { if (n) ping(n - 1); }\n",
    "a_plugin.c": "int plug(void) { return 1; }\n",
    "b_plugin.c": "int plug(void) { return 2; }\n",
    "host.c": "int plug(void);\nint served(void) { return plug(); }\n",
}


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A small source tree with both kinds of circle csrc/ once had, compiled into objects of its own."""
    sources, objects = tmp_path / "src", tmp_path / "obj"
    sources.mkdir()
    objects.mkdir()
    for name, text in PLANTED.items():
        (sources / name).write_text(text)
    for source in sources.glob("*.c"):
        subprocess.run(
            ["gcc", "-std=c11", "-O0", "-c", str(source), "-o", str(objects / f"{source.stem}.o")], check=True
        )
    return sources, objects


def test_the_graph_sees_a_circle_through_a_header_s_inline_and_between_two_files(planted, tmp_path):
    sources, objects = planted
    graph = file_graph(sources, objects, tmp_path)
    assert graph["count.h"] == {"count.c"}  # its inline function calls what count.c defines
    assert graph["count.c"] == {"count.h"} and circle({k: graph[k] for k in ("count.h", "count.c")})
    assert graph["ping.c"] == {"pong.c"} and graph["pong.c"] == {"ping.c"}
    assert graph["host.c"] == set()  # plug() is defined by two plug-ins: an interface, not a file's
    assert circle(graph)


def test_no_circle_between_the_c_files(tmp_path):
    """Built by the session's fixture (bin_dir), so the objects are the sources'."""
    graph = file_graph(CSRC, build_dir() / "obj", tmp_path)
    assert "transfer.c" in graph["send_one_copy.c"]  # the graph holds the calls between files
    assert circle(graph) == [], "a circle between csrc/ files: " + " -> ".join(circle(graph))


def test_a_new_sending_path_is_one_c_file(tmp_path):
    """Adding a sender, the C half: its send_NAME.c and nothing else in csrc/ (the Makefile finds it and links it
    with the core), and its two programs print what the contract declares.  The other half, its one declaration,
    goes everywhere in Python: tests/test_registry.py."""
    sources, out = tmp_path / "csrc", tmp_path / "build"
    shutil.copytree(CSRC, sources)
    shutil.copytree(build_dir() / "obj", out / "obj")  # times kept: only the new file is compiled
    one_copy = (CSRC / "send_one_copy.c").read_text()
    assert '"one_copy"' in one_copy
    (sources / "send_fake_copy.c").write_text(one_copy.replace('"one_copy"', '"fake_copy"'))
    programs = [str(out / "bin" / f"fake_copy_{end}") for end in ("server", "client")]
    subprocess.run(["make", "-s", "-C", str(sources), f"OUT={out}", *programs], check=True, capture_output=True)
    outputs = _run(out / "bin", program_pair("fake_copy"), "stream", tmp_path)
    for role, stdout in outputs.items():
        assert contract.parse(role, stdout)["variant"] == "fake_copy"
