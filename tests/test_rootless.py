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

from copylab.declarations import config
from copylab.declarations.settings import socket_buffer
from copylab.errors import CopylabError
from copylab.measure.planning import schedule
from copylab.paths import ROOT
from copylab.programs.perf import USER_MODE_ONLY
from copylab.testbeds import userns
from tests.conftest import needs_root
from tests.robustness_table import Counted, Looked, Outcome, rows_due

SETTINGS = dict(
    implementations=["two_copy", "zero_copy"],
    workloads=["stream"],
    sizes=[65536],
    threads=[1],
    trials=1,
    duration_s=0.3,
    warmup_s=0.05,
    receive=["copy"],
    pinning=["same_cpu"],
    calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    kernel_copies=True,  # quick runs without the counts; asked for, without root they are refused with the reason
)
SWEEP = """
import csv, json, sys
from pathlib import Path
from copylab.declarations import config
from copylab.measure import sweep
from copylab.record.store import SweepStore
settings = config.make_config("rootless", "quick", **json.loads(sys.argv[2]))
result = sweep.run(settings, SweepStore.under(Path(sys.argv[1]), settings.name), progress=False)
print(json.dumps({"ran": result.ran, "failed": result.failures, "uid": __import__("os").geteuid()}))
"""


@needs_root
def test_a_sweep_runs_as_nobody_in_a_user_namespace_and_leaves_nothing(bin_dir, outcome):
    outcome.update(area="privilege", fault="run-sweep as the unprivileged user nobody (setpriv)")
    # nobody may not reach this interpreter, its environment (the project's .venv, a conda env) or this checkout
    # (e.g. under /root): show them to it through bind mounts of a private mount namespace, in a directory it can
    # reach (pytest's own are root's only).
    scratch = Path(tempfile.mkdtemp(prefix="copylab-rootless-"))
    try:
        _sweep_as_nobody(scratch, outcome)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class Shown:
    """The directories this Python runs from (its interpreter's installation, its environment, every directory
    on its sys.path, this checkout), each bind-mounted under SEEN for another user to reach."""

    def __init__(self, seen: Path) -> None:
        interpreter = Path(sys.executable).resolve()
        wanted = [ROOT, Path(sys.base_prefix), Path(sys.prefix), interpreter.parent.parent]
        wanted += [Path(entry).resolve() for entry in sys.path if entry and Path(entry).is_dir()]
        self.roots: dict[Path, Path] = {}
        for directory in sorted({path.resolve() for path in wanted}, key=lambda path: len(path.parts)):
            if not any(directory.is_relative_to(root) for root in self.roots):
                self.roots[directory] = seen / str(len(self.roots))
        self.interpreter = self.seen_as(interpreter)
        # The same module search path as here, the checkout first: whatever the environment, copylab and its
        # packages are imported from where this process imports them.
        self.path = [self.seen_as(ROOT), *(self.seen_as(Path(e)) for e in sys.path if e and Path(e).is_dir())]

    def seen_as(self, path: Path) -> Path:
        path = path.resolve()
        root = next(root for root in self.roots if path.is_relative_to(root))
        return self.roots[root] / path.relative_to(root)

    def mounts(self) -> str:
        return " && ".join(f"mount --bind {root} {seen}" for root, seen in self.roots.items())


def _sweep_as_nobody(tmp_path: Path, outcome: Outcome) -> None:
    seen, data = tmp_path / "seen", tmp_path / "data"
    shown = Shown(seen)
    for directory in (*shown.roots.values(), data):
        directory.mkdir(parents=True)
    for directory in (tmp_path, seen, *shown.roots.values()):
        directory.chmod(0o755)
    data.chmod(0o777)
    nobody = [
        *("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"),
        *("env", "-i", f"PATH={os.environ['PATH']}", f"HOME={data}", f"MPLCONFIGDIR={data}"),
        f"PYTHONPATH={':'.join(map(str, shown.path))}",
        *(str(shown.interpreter), "-c", SWEEP, str(data), json.dumps(SETTINGS)),
    ]
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{shown.mounts()} && exec "$@"', "sh", *nobody],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=data,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    manifest = json.loads((data / "rootless" / "manifest.json").read_text())
    rows = _rows(data / "rootless" / "trials.csv")
    left = "\n".join(_nobody_working_in(data))
    due = [spec.trial_id for spec in schedule.plan(config.make_config("rootless", "quick", **SETTINGS))]
    outcome.update(
        behaviour=f"{summary['ran']} trials as uid {summary['uid']}, privilege {manifest['privilege']}, "
        f"context switches: {manifest['perf']['unsupported_events'].get('context-switches', 'counted')}; "
        f"Python from {sys.prefix}",
        rows_lost=rows_due(due, rows),
        leftovers=Looked(left.splitlines(), "processes of the user nobody working in the sweep's directory"),
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
    assert outcome["rows_lost"] == Counted(2, 0) and left == "", left


def _nobody_working_in(directory: Path) -> list[str]:
    """The processes of nobody whose working directory is DIRECTORY or below it: the sweep's and its children's,
    which inherit it.  Other tests run processes as nobody at the same time; a zombie has no directory and holds
    nothing (its parent, if it were the sweep's, would be listed)."""
    listed = subprocess.run(["pgrep", "-u", "nobody", "-a"], capture_output=True, text=True).stdout.splitlines()
    found = []
    for line in listed:
        try:
            working = Path(os.readlink(f"/proc/{line.split()[0]}/cwd"))
        except OSError:  # gone since, or a zombie
            continue
        if working.is_relative_to(directory):
            found.append(line)
    return found


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
