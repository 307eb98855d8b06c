"""The main job without root (issue 47): ./inv report, at a tiny scale, run by an unprivileged user on a copy of the
checkout it owns, measures what it can, skips the sweep that needs the host and says so in the PDF."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from copylab import experiments
from copylab.declarations.config import make_config
from copylab.paths import ROOT
from copylab.testbeds import sender_pages
from tests.test_rootless import Shown

# Every reported sweep shrunk to a few short trials: the job's path, not its numbers, is under test.
TINY = """
import json, sys
from copylab import experiments
from copylab.cli import commands
for experiment, profile in experiments.reported():
    declared = experiment.profiles[profile]
    declared.update(trials=3, duration_s=0.05, warmup_s=0.02, max_trials=4)
    if declared.get("side_sizes"):  # the sweeps of many sizes; the others' grids are what makes them theirs
        declared.update(sizes=list(declared["sizes"])[:2], side_sizes=list(declared["sizes"])[:1])
    if declared.get("connections"):
        declared.update(connections=list(declared["connections"])[:2])
sys.exit(commands.report(budget="3"))
"""


def _refused_without_root() -> list[str]:
    """The reported profiles an unprivileged user cannot run on this host: those that change the host's sender pages
    and the one that counts with BPF."""
    configs = [(profile, make_config("x", profile, experiment=e.name)) for e, profile in experiments.reported()]
    return [p for p, c in configs if sender_pages.refusal_without_root(c.sender_pages) or c.kernel_copies]


def _checkout_copy(into: Path) -> Path:
    """The tracked files of this checkout but its data, and its built programs' sources, copied under INTO."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    copy = into / "checkout"
    for name in tracked.decode().split("\0"):
        if not name or name.startswith("data/"):
            continue
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    (copy / "data").mkdir(exist_ok=True)
    return copy


def _kernel_spec(home: Path, interpreter: Path) -> Path:
    """A Jupyter path whose kernel "copylab" starts INTERPRETER, the path this user sees it at."""
    spec = home / "jupyter" / "kernels" / "copylab"
    spec.mkdir(parents=True)
    argv = [str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "copylab", "language": "python"}))
    return home / "jupyter"


def test_the_main_job_runs_without_root_and_says_what_it_could_not_measure():
    scratch = Path(tempfile.mkdtemp(prefix="copylab-report-noroot-"))
    try:
        _report_without_root(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _report_without_root(scratch: Path) -> None:
    copy, home, seen = _checkout_copy(scratch), scratch / "home", scratch / "seen"
    home.mkdir()
    shown = Shown(seen)
    for directory in shown.roots.values():
        directory.mkdir(parents=True)
    for directory in (scratch, seen, *shown.roots.values()):
        directory.chmod(0o755)
    jupyter = _kernel_spec(home, shown.interpreter)
    environment = [
        f"PATH={os.environ['PATH']}",
        f"HOME={home}",
        f"MPLCONFIGDIR={home}",
        # the kernel above, then the environment's own (nbconvert's templates): it is not activated, only shown
        f"JUPYTER_PATH={jupyter}:{shown.seen_as(Path(sys.prefix) / 'share' / 'jupyter')}",
        f"PYTHONPATH={':'.join(map(str, [copy, *shown.path]))}",
        # an interpreter built with a shared libpython finds it by an absolute path nobody may not reach, and would
        # load the system's instead (another patch release, whose C modules its standard library does not fit)
        f"LD_LIBRARY_PATH={shown.seen_as(Path(sys.base_prefix) / 'lib')}",
    ]
    command = ["env", "-i", *environment, str(shown.interpreter), "-c", TINY]
    if os.geteuid() == 0:  # CI runs as root: drop to nobody, who owns the copy
        subprocess.run(["chown", "-R", "nobody:nogroup", str(copy), str(home)], check=True)
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{shown.mounts()} && exec "$@"', "sh"]
        command += ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "env", "-i", *environment]
        command += [str(shown.interpreter), "-c", TINY]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=copy)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    pdf = copy / "report" / "report.pdf"
    assert pdf.is_file() and result.stdout.strip().splitlines()[-1].startswith(f"report: {pdf}")
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout.split())
    refused = _refused_without_root()
    if refused:
        assert "Not measured here:" in text and all(profile in text for profile in refused)
        assert f"Run as root, ./inv report measures {'it' if len(refused) == 1 else 'them'} too." in text
    else:
        assert "Not measured here:" not in text
    manifests = [json.loads(path.read_text()) for path in (copy / "data").glob("*/manifest.json")]
    assert manifests and {m["privilege"] for m in manifests} == {"user-namespace"}
    # The CPU breakdown needs root: each sweep's profile says so in one line, never zeros, and so does the report.
    profiles = [path.read_text() for path in (copy / "data").glob("*/profile.csv")]
    assert len(profiles) == len(manifests)
    assert all(p.startswith("not sampled: ") and "needs root" in p and p.count("\n") == 1 for p in profiles)
    assert {m["sampler"]["sampled"] for m in manifests} == {False}
    assert "No CPU breakdown for" in text and "needs root" in text
