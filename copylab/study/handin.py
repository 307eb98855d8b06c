"""`./inv handin`: what a student hands in, as one archive: the report (PDF and web page), the sweeps it was
rendered from (data/NAME/) and their figures (figures/NAME/), with a SHA256SUMS file that `sha256sum -c` checks.

The sweeps are the ones the report notebook was executed on: papermill records its parameters in the executed
notebook (report/report.ipynb), so an archive holds exactly the data behind the PDF beside it, measured or
rendered from --data.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path

from copylab import error_catalogue
from copylab.paths import FIGURES, REPORT, shown
from copylab.record.store import SweepStore

TOP = "handin"  # the archive's one top-level folder
SUMS = "SHA256SUMS"


def report_sweeps(executed: Path) -> list[SweepStore]:
    """The sweeps the executed report notebook EXECUTED was rendered from, with the figures root it used."""
    try:
        parameters = json.loads(executed.read_text(encoding="utf-8"))["metadata"]["papermill"]["parameters"]
        directories, figures_root = parameters["data_dirs"], parameters.get("figures_root")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise error_catalogue.REPORT_SWEEPS_UNKNOWN.error(notebook=shown(executed), reason=error) from None
    stores = [SweepStore(directory, figures_root=Path(figures_root or FIGURES)) for directory in directories]
    for store in stores:
        if not store.trials_path.is_file():
            raise error_catalogue.REPORT_SWEEP_GONE.error(directory=shown(store.directory))
    return stores


def _files(directory: Path) -> Iterator[Path]:
    return (path for path in sorted(directory.rglob("*")) if path.is_file())


def handed_in(report_dir: Path | None = None) -> dict[str, Path]:
    """Each file of the archive by its name inside it: the report's PDF and HTML, its sweeps and their figures
    (REPORT_DIR: where the report is, report/ by default)."""
    report_dir = REPORT if report_dir is None else report_dir
    pdf, html, executed = (report_dir / f"report.{suffix}" for suffix in ("pdf", "html", "ipynb"))
    missing = [path.name for path in (pdf, html, executed) if not path.is_file()]
    if missing:
        raise error_catalogue.NO_REPORT.error(missing=", ".join(missing), directory=shown(report_dir))
    files = {f"report/{path.name}": path for path in (pdf, html)}
    for store in report_sweeps(executed):
        files.update({f"data/{store.key}/{p.relative_to(store.directory)}": p for p in _files(store.directory)})
        files.update({f"figures/{store.key}/{p.relative_to(store.figures_dir)}": p for p in _files(store.figures_dir)})
    return files


def _digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def write_handin(out: Path, report_dir: Path | None = None) -> tuple[Path, int]:
    """The archive OUT (.tar.gz) of handed_in(REPORT_DIR) under one folder, SHA256SUMS inside; its path and how many
    files it holds besides SHA256SUMS."""
    files = handed_in(report_dir)
    sums = "".join(f"{_digest(path)}  {name}\n" for name, path in sorted(files.items())).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")  # a failed run leaves no archive that looks whole
    with tarfile.open(partial, "w:gz") as archive:
        for name, path in sorted(files.items()):
            archive.add(path, arcname=f"{TOP}/{name}", recursive=False)
        entry = tarfile.TarInfo(f"{TOP}/{SUMS}")
        entry.size = len(sums)
        archive.addfile(entry, io.BytesIO(sums))
    partial.replace(out)
    return out, len(files)


DEFAULT_ARCHIVE = REPORT / "handin.tar.gz"


def hand_in(out: Path | None = None) -> int:
    """`./inv handin`: writes the archive (OUT, or DEFAULT_ARCHIVE) and says where."""
    archive, count = write_handin(out or DEFAULT_ARCHIVE)
    print(f"handin: {shown(archive)} ({count} files and their SHA256SUMS)")
    return 0
