"""./inv handin: one archive of the report, exactly the sweeps it was rendered from and their figures, and the
checksums of every file; without a report, one line and no archive."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from copylab.cli.main import main
from copylab.errors import CopylabError
from copylab.paths import ROOT
from copylab.study import handin


def _sweep(root: Path, name: str) -> Path:
    directory = root / "data" / name
    directory.mkdir(parents=True)
    (directory / "trials.csv").write_text(f"trial_id\n{name}-1\n")
    (directory / "manifest.json").write_text(json.dumps({"sweep": name}))
    figures = root / "figures" / name
    figures.mkdir(parents=True)
    (figures / "throughput.png").write_bytes(name.encode())
    return directory


def _report(root: Path, used: list[Path]) -> Path:
    """A report folder as render_report leaves it: the PDF, the web page and the executed notebook that papermill
    stamped with the sweeps it ran on."""
    report = root / "report"
    report.mkdir()
    (report / "report.pdf").write_bytes(b"%PDF-1.5 a report")
    (report / "report.html").write_text("<html>a report</html>")
    parameters = {"data_dirs": [str(path) for path in used], "figures_root": str(root / "figures")}
    (report / "report.ipynb").write_text(json.dumps({"metadata": {"papermill": {"parameters": parameters}}}))
    return report


def test_the_archive_holds_the_report_its_sweeps_their_figures_and_true_checksums(tmp_path):
    used = [_sweep(tmp_path, "quick-1"), _sweep(tmp_path, "sink-1")]
    _sweep(tmp_path, "another-run")  # in data/, but not what the report was rendered from
    archive, count = handin.write_handin(tmp_path / "out" / "handin.tar.gz", _report(tmp_path, used))
    with tarfile.open(archive) as opened:
        names = sorted(opened.getnames())
        opened.extractall(tmp_path / "unpacked", filter="data")
    assert names == sorted(
        f"handin/{name}"
        for name in [
            "SHA256SUMS",
            "report/report.pdf",
            "report/report.html",
            *(f"data/{sweep}/{file}" for sweep in ("quick-1", "sink-1") for file in ("trials.csv", "manifest.json")),
            *(f"figures/{sweep}/throughput.png" for sweep in ("quick-1", "sink-1")),
        ]
    )
    assert count == len(names) - 1
    unpacked = tmp_path / "unpacked" / "handin"
    check = subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=unpacked, capture_output=True)
    assert check.returncode == 0, check.stdout
    # a file changed after packing is caught by the sums it carries
    (unpacked / "data" / "quick-1" / "trials.csv").write_text("trial_id\nedited\n")
    assert subprocess.run(["sha256sum", "--check", "SHA256SUMS"], cwd=unpacked, capture_output=True).returncode != 0
    listed = dict(line.split("  ")[::-1] for line in (unpacked / "SHA256SUMS").read_text().splitlines())
    assert listed["report/report.pdf"] == hashlib.sha256(b"%PDF-1.5 a report").hexdigest()


def test_a_sweep_gone_since_the_report_is_refused(tmp_path):
    used = [_sweep(tmp_path, "quick-1")]
    report = _report(tmp_path, used)
    (used[0] / "trials.csv").unlink()
    with pytest.raises(CopylabError, match="no longer holds a sweep"):
        handin.write_handin(tmp_path / "handin.tar.gz", report)
    assert not (tmp_path / "handin.tar.gz").exists()


def test_without_a_report_the_task_says_so_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(handin, "REPORT", tmp_path / "report")
    out = tmp_path / "handin.tar.gz"
    assert main(["handin", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("copylab: error: no report to hand in")
    assert "./inv report" in error
    assert not out.exists()


def test_the_task_is_on_the_command_line():
    result = subprocess.run([sys.executable, "-m", "copylab", "handin", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "SHA256SUMS" in result.stdout, result.stderr
    assert (ROOT / "report").name in handin.DEFAULT_ARCHIVE.parts
