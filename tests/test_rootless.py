"""Without root: a sweep in a user namespace of its own, run for real as the unprivileged user nobody."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from copylab.declarations import socket_buffer
from copylab.errors import CopylabError
from copylab.paths import ROOT
from copylab.programs.perf import USER_MODE_ONLY
from copylab.testbeds import userns
from tests.conftest import needs_root

SWEEP = """
import csv, json, sys
from pathlib import Path
from copylab.declarations import config
from copylab.measure import sweep
settings = config.make_config(
    "rootless", "quick", implementations=["two_copy", "zero_copy"], workloads=["stream"], sizes=[65536],
    threads=[1], trials=1, duration_s=0.3, warmup_s=0.05, receive=["copy"], pinning=["same_cpu"],
)
result = sweep.run(settings, data_root=Path(sys.argv[1]), progress=False)
print(json.dumps({"ran": result.ran, "failed": result.failures, "uid": __import__("os").geteuid()}))
"""


@needs_root
def test_a_sweep_runs_as_nobody_in_a_user_namespace_and_leaves_nothing(bin_dir, outcome):
    outcome.update(area="privilege", fault="run-sweep as the unprivileged user nobody (setpriv)")
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if not site.is_relative_to(ROOT):
        pytest.skip(f"the Python environment {sys.prefix} is not the project's .venv")
    # nobody may not reach this interpreter or this checkout (e.g. under /root): show both to it through bind
    # mounts of a private mount namespace, in a directory it can reach (pytest's own are root's only).
    scratch = Path(tempfile.mkdtemp(prefix="copylab-rootless-"))
    try:
        _sweep_as_nobody(scratch, site, outcome)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _sweep_as_nobody(tmp_path: Path, site: Path, outcome: dict[str, object]) -> None:
    seen = tmp_path / "seen"
    python, repo, data = seen / "python", seen / "repo", tmp_path / "data"
    for directory in (python, repo, data):
        directory.mkdir(parents=True)
    for directory in (tmp_path, seen, python, repo):
        directory.chmod(0o755)
    data.chmod(0o777)
    interpreter = python / Path(sys.executable).resolve().relative_to(sys.base_prefix)
    setup = f"mount --bind {sys.base_prefix} {python} && mount --bind {ROOT} {repo}"
    run_as_nobody = [
        *("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"),
        *("env", "-i", f"PATH={os.environ['PATH']}", f"HOME={data}", f"MPLCONFIGDIR={data}"),
        f"PYTHONPATH={repo}:{repo / site.relative_to(ROOT)}",
        *(str(interpreter), "-c", SWEEP, str(data)),
    ]
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{setup} && exec "$@"', "sh", *run_as_nobody],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=data,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    manifest = json.loads((data / "rootless" / "manifest.json").read_text())
    rows = _rows(data / "rootless" / "trials.csv")
    left = subprocess.run(["pgrep", "-u", "nobody", "-a"], capture_output=True, text=True).stdout.strip()
    outcome.update(
        behaviour=f"{summary['ran']} trials as uid {summary['uid']}, privilege {manifest['privilege']}, "
        f"context switches: {manifest['perf']['unsupported_events'].get('context-switches', 'counted')}",
        rows_lost=0,
        leftovers=[left] if left else [],
    )
    assert summary["uid"] != 0 and summary["ran"] == 2 and summary["failed"] == []
    assert all(row["status"] == "ok" for row in rows) and len(rows) == 2
    assert manifest["privilege"] == "user-namespace"
    assert manifest["perf"]["unsupported_events"]["context-switches"] == USER_MODE_ONLY
    assert all(row["snd_context_switches"] == "" for row in rows), "never a user-mode-only zero"
    assert all("BPF needs root" in row["kernel_copy_missing"] for row in rows)
    # No CAP_NET_ADMIN over the host: the socket buffers the sweep chose fit under this machine's caps.
    buffer = socket_buffer.within(socket_buffer.caps_here())
    assert {row["socket_buffer_bytes"] for row in rows} == {str(buffer)}
    assert {row["rcv_receive_buffer_bytes"] for row in rows} == {str(2 * buffer)}
    assert left == "", left


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def test_disabled_user_namespaces_are_named_in_one_line(tmp_path, monkeypatch):
    limit = tmp_path / "max_user_namespaces"
    limit.write_text("0\n")
    monkeypatch.setattr(userns, "MAX_USER_NAMESPACES", limit)
    with pytest.raises(CopylabError, match=r"user namespaces are disabled here \(user.max_user_namespaces = 0\)"):
        userns.UserNamespace.check_enabled()
    limit.write_text("15000\n")
    userns.UserNamespace.check_enabled()
