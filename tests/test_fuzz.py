"""Fuzzing, bounded for CI: the C programs' option parser and the trials.csv loader.

COPYLAB_FUZZ_EXAMPLES=5000 runs a longer campaign (each test's example count).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copylab.declarations import implementations, schema
from copylab.errors import CopylabError
from copylab.programs.build import build
from copylab.record.manifest import Manifest
from copylab.record.trials_file import check_manifest
from tests.conftest import needs_root
from tests.synthetic import load_trials, make_trials, write_sweep

EXAMPLES = int(os.environ.get("COPYLAB_FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(
    max_examples=EXAMPLES or 400,
    deadline=None,
    database=None,
    derandomize=EXAMPLES is None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TIMEOUT = pytest.mark.timeout(max(300, (EXAMPLES or 0) // 5))
PROGRAMS = [f"{variant}_{role}" for variant in ("two_copy", "one_copy", "zero_copy") for role in ("server", "client")]
# A run that is still going after this long parsed its options and is waiting for a peer.
RUNNING_S = 0.5

# ---------------------------------------------------------------- the C option parser

OPTIONS = [
    "--bind",
    "--connect",
    "--port",
    "--size",
    "--threads",
    "--duration",
    "--warmup",
    "--timeout",
    "--mode",
    "--verify",
    "--perf-ctl",
    "--perf-ack",
    "--help",
    "--bogus",
    "--",
    "-",
    "-x",
    "--port=",
    "--size=",
    "--th",
    "--dur",
    "--s",
    "--verif",
    "-h",
]
NUMBERS = [
    "0",
    "1",
    "7",
    "8",
    "64",
    "1K",
    "4K",
    "64M",
    "65M",
    "1G",
    "16G",
    "99999999999999999999",
    "-1",
    "+5",
    " 5",
    "5 ",
    "0x10",
    "1e3",
    "1.5",
    "nan",
    "inf",
    "-0",
    "0.0001",
    "3600",
    "3601",
    "65535",
    "65536",
    "18446744073709551615",
    "18446744073709551616",
    "K",
    "",
    "5KK",
    "5k",
    "2\t",
]
ADDRESSES = [
    "127.0.0.1",
    "10.203.0.1",
    "::1",
    "0.0.0.0",
    "::",
    "1.2.3",
    "300.1.1.1",
    "localhost",
    "example.org",
    "fe80::1%lo",
    "",
    "1.2.3.4.5",
]
WORDS = ["stream", "rr", "bulk", "STREAM"]
# No '/' in free text: a value after --perf-ctl must never name a file outside the fuzz's own directory.
TEXT = st.text(st.characters(blacklist_characters="\x00/", blacklist_categories=("Cs",)), max_size=12)
VALUES = st.one_of(
    st.sampled_from(NUMBERS + ADDRESSES + WORDS),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    TEXT,
)
TOKENS = st.one_of(
    st.sampled_from(OPTIONS),
    VALUES,
    st.tuples(st.sampled_from(OPTIONS[:12]), VALUES).map(lambda pair: f"{pair[0]}={pair[1]}"),
)
# Mostly well-formed command lines (each value good or fuzzed), so that the fuzz gets past the first
# bad option into the value parsers, the cross-option checks and the programs' start-up.
GOOD = {
    "--port": ["5201", "1", "65535"],
    "--size": ["8", "64", "1003", "1K", "64M"],
    "--threads": ["1", "8", "64"],
    "--duration": ["0.1", "1", "3600"],
    "--warmup": ["0", "0.5", "600"],
    "--timeout": ["0.2", "1"],
    "--mode": ["stream", "rr"],
}


def _option(name: str) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.sampled_from(GOOD[name]), VALUES).map(lambda value: [name, value])


WELL_FORMED = st.tuples(
    st.sampled_from(ADDRESSES),
    _option("--port"),
    _option("--size"),
    st.lists(st.sampled_from([name for name in GOOD if name not in ("--port", "--size")]).flatmap(_option), max_size=4),
    st.lists(st.sampled_from(["--verify", "--help"]), max_size=1),
    st.lists(TOKENS, max_size=2),
).map(
    lambda parts: [
        "ADDRESS",
        parts[0],
        *parts[1],
        *parts[2],
        *(word for option in parts[3] for word in option),
        *parts[4],
        *parts[5],
    ]
)
ARGV = st.one_of(st.lists(TOKENS, max_size=10), WELL_FORMED)


@pytest.fixture(scope="module")
def fuzz_programs(bin_dir: Path) -> list[Path]:
    """The plain programs and their ASan+UBSan builds, which turn silent memory errors into failures."""
    return [bin_dir / name for name in PROGRAMS] + [build("address") / "bin" / name for name in PROGRAMS]


@needs_root  # each run gets an empty network namespace, so accepted options cannot reach any network
@TIMEOUT
def test_option_parser_never_crashes(fuzz_programs, outcome):
    outcome.update(
        area="fuzz",
        fault="hypothesis-generated argv lists against the six programs, plain and ASan+UBSan builds",
        rows_lost=None,
        leftovers=None,
    )
    seen: dict[str, int] = {"exit 0": 0, "exit 1": 0, "exit 2": 0, "still running (options accepted)": 0}
    workdir = Path(tempfile.mkdtemp(prefix="copylab-fuzz-"))
    environment = dict(
        os.environ,
        ASAN_OPTIONS="exitcode=86:detect_leaks=0",
        UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1",
    )

    @FUZZ
    @given(program=st.sampled_from(fuzz_programs), argv=ARGV)
    def run(program: Path, argv: list[str]) -> None:
        argv = [
            ("--bind" if program.name.endswith("server") else "--connect") if word == "ADDRESS" else word
            for word in argv
        ]
        process = subprocess.Popen(
            ["unshare", "--net", "--", str(program), *argv],
            cwd=workdir,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        try:
            stdout, stderr = process.communicate(timeout=RUNNING_S)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            assert stderr == "", f"{program.name} {argv}: still running after an error line: {stderr!r}"
            seen["still running (options accepted)"] += 1
            return
        code = process.returncode
        assert code in (0, 1, 2), f"{program.name} {argv}: exit {code} (a signal or a sanitizer): {stderr[-2000:]}"
        seen[f"exit {code}"] += 1
        if code == 0:
            assert stdout.startswith("usage: ") and stderr == "", f"{program.name} {argv}: exit 0 without --help"
        else:
            assert stderr.count("\n") == 1 and stderr.startswith("copylab: error: "), (
                f"{program.name} {argv}: stderr {stderr!r}"
            )
            assert code != 2 or stdout == "", f"{program.name} {argv}: printed output on bad usage"

    try:
        run()
    finally:
        for leftover in workdir.iterdir():
            leftover.unlink()
        workdir.rmdir()
        outcome["behaviour"] = (
            f"{sum(seen.values())} runs: "
            + ", ".join(f"{n} {what}" for what, n in seen.items())
            + "; no signal, sanitizer report or multi-line error"
        )
    assert seen["exit 2"] > 0 and seen["exit 1"] > 0, "the fuzz must reach both usage and runtime errors"


# ---------------------------------------------------------------- the trials loader

SPECIAL = [
    "",
    " ",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "0",
    "1e309",
    "0x10",
    "1.5",
    "True",
    "ok",
    "failed",
    "two_copy",
    "iperf3",
    "stream",
    "rr",
    "same_cpu",
    '"',
    '""',
    ",",
    "\n",
    "\r\n",
    "\ufeff",
    "\x00",
    "é",
    "9" * 30,
    "2025-01-01T00:00:00Z",
]
PAYLOAD = st.one_of(
    st.sampled_from(SPECIAL), st.text(max_size=8), st.text(st.sampled_from(',"\n\r0123456789.-eE abc'), max_size=12)
)
MUTATION = st.one_of(
    st.tuples(st.just("insert"), st.floats(0, 1), PAYLOAD),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 40)),
    st.tuples(st.just("replace"), st.floats(0, 1), PAYLOAD),
    st.tuples(st.just("cell"), st.floats(0, 1), PAYLOAD),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just("")),
    st.tuples(st.just("duplicate-line"), st.floats(0, 1), st.just("")),
    st.tuples(st.just("drop-line"), st.floats(0, 1), st.just("")),
    st.tuples(st.just("swap-lines"), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.just("bytes"), st.floats(0, 1), st.binary(min_size=1, max_size=4)),
)


def mutate(data: bytes, mutations: list[tuple]) -> bytes:
    for kind, where, payload in mutations:
        lines = data.split(b"\n")
        at = min(int(where * len(data)), len(data))
        line = min(int(where * len(lines)), len(lines) - 1)
        if kind == "insert":
            data = data[:at] + payload.encode("utf-8", "surrogatepass") + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + payload :]
        elif kind == "replace":
            data = data[:at] + payload.encode("utf-8", "surrogatepass") + data[at + len(payload) :]
        elif kind == "cell":
            cells = lines[line].split(b",")
            cells[min(int(where * 997) % len(cells), len(cells) - 1)] = payload.encode("utf-8", "surrogatepass")
            lines[line] = b",".join(cells)
            data = b"\n".join(lines)
        elif kind == "truncate":
            data = data[:at]
        elif kind == "duplicate-line":
            data = b"\n".join([*lines[: line + 1], lines[line], *lines[line + 1 :]])
        elif kind == "drop-line":
            data = b"\n".join(lines[:line] + lines[line + 1 :])
        elif kind == "swap-lines":
            other = min(int(payload * len(lines)), len(lines) - 1)
            lines[line], lines[other] = lines[other], lines[line]
            data = b"\n".join(lines)
        else:
            data = data[:at] + payload + data[at:]
    return data


def check_valid(trials: pd.DataFrame) -> None:
    """What a returned frame promises: copylab's columns, types and values, at least one ok row."""
    assert list(trials.columns) == list(schema.COLUMN_NAMES)
    for column in schema.COLUMNS:
        values = trials[column.name]
        if column.required:
            assert values.notna().all(), column.name
        if column.kind == "int" and column.required:
            assert values.dtype == np.int64, column.name
        elif column.kind in ("int", "float"):
            assert values.dtype == np.float64 and not np.isinf(values).any(), column.name
    assert set(trials["status"]) <= set(schema.STATUSES) and (trials["status"] == "ok").any()
    assert set(trials["implementation"]) <= set(implementations.names())
    # A retried failed trial keeps its planned id (--resume): only measurements must be unique.
    assert trials.loc[trials["status"] == "ok", "trial_id"].is_unique
    assert (trials[["size_bytes", "threads", "repetition"]] >= 1).all().all()


@TIMEOUT
def test_loader_returns_a_valid_frame_or_a_copylab_error(tmp_path, outcome):
    outcome.update(
        area="fuzz",
        fault="hypothesis-mutated trials.csv text (inserted, deleted, replaced and "
        "non-UTF-8 bytes, cells, lines, truncation) through load_trials and "
        "check_manifest",
        rows_lost=None,
        leftovers=None,
    )
    directory = write_sweep(
        tmp_path / "synthetic",
        make_trials(sizes=(1024, 4096), rr_sizes=(64,), threads=(1,), trials=2, failed=1, seed=4),
    )
    original = (directory / "trials.csv").read_bytes()
    manifest = Manifest.from_dict(json.loads((directory / "manifest.json").read_text()))
    counts = {"loaded": 0, "CopylabError": 0}

    @FUZZ
    @given(mutations=st.lists(MUTATION, min_size=1, max_size=4))
    def run(mutations: list[tuple]) -> None:
        path = directory / "trials.csv"
        path.write_bytes(mutate(original, mutations))
        try:
            trials = load_trials(path)
        except CopylabError as error:
            assert "\n" not in str(error), "one line"
            counts["CopylabError"] += 1
            return
        check_valid(trials)
        counts["loaded"] += 1
        with contextlib.suppress(CopylabError):
            check_manifest(trials, manifest, path)

    run()
    outcome["behaviour"] = (
        f"{sum(counts.values())} mutated files: {counts['loaded']} loaded as valid frames, "
        f"{counts['CopylabError']} refused with a one-line CopylabError, no other exception"
    )
    assert counts["CopylabError"] > 0 and counts["loaded"] > 0, counts
