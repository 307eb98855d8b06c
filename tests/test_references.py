"""The committed reference sweeps were measured by today's harness: at a clean commit of this history, with the
transport settings the current code records (a newcomer's first look, the explorer's default data and the golden
report all read them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from copylab.declarations.settings import get as setting
from copylab.declarations.settings import socket_buffer
from copylab.paths import REFERENCES, ROOT
from copylab.record.store import SweepStore

NEEDS_HISTORY = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and the project's history"
)


def test_every_reference_is_present():
    assert REFERENCES
    for directory in REFERENCES:
        for name in ("trials.csv", "manifest.json"):
            assert (directory / name).is_file(), f"{directory.name}/{name} is missing"


@NEEDS_HISTORY
def test_every_reference_is_committed():
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "data"], capture_output=True, text=True, check=True)
    tracked = set(listed.stdout.split())
    for directory in REFERENCES:
        for name in ("trials.csv", "manifest.json"):
            assert f"data/{directory.name}/{name}" in tracked, f"{directory.name}/{name} is not committed"


def _in_history(commit: str) -> bool:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "--is-ancestor", commit, "HEAD"], capture_output=True, text=True
    )
    return found.returncode == 0


@NEEDS_HISTORY
@pytest.mark.parametrize("directory", REFERENCES, ids=[path.name for path in REFERENCES])
def test_each_reference_was_measured_at_a_clean_commit_of_this_history(directory):
    git = SweepStore(directory).read_manifest().git
    assert not git.dirty, f"{directory.name} was measured with uncommitted changes at {git.commit}"
    assert _in_history(git.commit), f"{directory.name}: {git.commit} is not a commit of this project's history"


@pytest.mark.parametrize("directory", REFERENCES, ids=[path.name for path in REFERENCES])
def test_each_reference_has_the_transport_settings_the_current_code_records(directory):
    trials, manifest = SweepStore(directory).load()
    parameters = manifest.parameters
    # What a sweep that names neither gets on namespaces as root: copylab's congestion control and buffers.
    assert parameters.congestion_control == setting("congestion_control").default
    assert parameters.socket_buffer == socket_buffer.PREFERRED
    ok = trials[trials["status"] == "ok"]
    assert len(ok) and set(ok["congestion_control"]) == {parameters.congestion_control}
    assert set(ok["socket_buffer_bytes"]) == {parameters.socket_buffer}
