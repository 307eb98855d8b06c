"""The one owner of a sweep's files: data/NAME/* (trials, manifest, analysis tables) and figures/NAME/*.

Nothing else in copylab opens them.  trials.csv is written one fsynced line per trial and read back through
the schema (copylab.record.trials_file), manifest.json as a typed Manifest (replaced atomically), the analysis tables
with the types copylab.record.tables declares.  Figures go to figures/ under the sweep's path relative to data/,
so a nested sweep (data/study/run1) gets figures/study/run1, never a folder under data/.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from copylab.declarations.schema import COLUMN_NAMES
from copylab.error_catalogue import (
    FIGURE_NOT_DRAWN,
    MANIFEST_INVALID,
    MANIFEST_NOT_JSON,
    NO_MANIFEST,
    NO_SUCH_FILE,
    NO_SWEEP_DIRECTORY,
    PROFILE_FILE_FOREIGN,
    TABLE_FOREIGN,
    TABLE_NOT_WRITTEN,
    TRIALS_FILE_FOREIGN,
)
from copylab.errors import CopylabError
from copylab.paths import DATA, FIGURES
from copylab.record import tables
from copylab.record.manifest import Manifest
from copylab.record.origin import ModifiedData, Origin
from copylab.record.trials_file import check_manifest, decode, parse_trials

if TYPE_CHECKING:  # drawing is the analysis's business: running a sweep never imports matplotlib
    from matplotlib.figure import Figure

TRIALS_FILE = "trials.csv"
MANIFEST_FILE = "manifest.json"
# The sampled profile of the trials' windows (copylab.programs.profile_reader): samples per trial, side and
# category, and the kernel functions no category claimed.  A sweep that could not sample writes one line instead.
PROFILE_FILE = "profile.csv"
PROFILE_SYMBOLS_FILE = "profile_symbols.csv"
NOT_SAMPLED = "not sampled: "
PROFILE_COLUMNS = {
    "trial_id": "str",
    "side": "str",
    "category": "str",
    "samples": "int64",
    "share": "float64",
    "trial_samples": "int64",
}
FIGURE_DPI = 200


class TrialWriter:
    """Appends rows to trials.csv, each line written whole, flushed and synced as it comes."""

    def __init__(self, path: Path) -> None:
        new = not path.exists() or path.stat().st_size == 0
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if new:
            self._write_line(list(COLUMN_NAMES))

    def _write_line(self, values: list[Any]) -> None:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(values)
        os.write(self.fd, buffer.getvalue().encode())
        os.fsync(self.fd)

    def write(self, row: Mapping[str, Any]) -> None:
        def cell(value: Any) -> Any:
            if value is None or (isinstance(value, float) and value != value):
                return ""
            return value

        self._write_line([cell(row.get(name)) for name in COLUMN_NAMES])

    def close(self) -> None:
        os.close(self.fd)


class SweepStore:
    """The files of the sweep in DIRECTORY, and where its figures go (under FIGURES_ROOT)."""

    def __init__(self, directory: str | Path, figures_root: str | Path = FIGURES, data_root: str | Path = DATA) -> None:
        self.directory = Path(directory).resolve()
        self.figures_root = Path(figures_root).resolve()
        self.data_root = Path(data_root).resolve()

    @classmethod
    def under(cls, data_root: str | Path, name: str) -> SweepStore:
        """The store of the sweep NAME in its own directory under DATA_ROOT."""
        return cls(Path(data_root) / name, data_root=data_root)

    def __repr__(self) -> str:
        return f"SweepStore({str(self.directory)!r})"

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def key(self) -> str:
        """The sweep's path below data/ ("study/run1"), or its directory's name when it lives elsewhere."""
        if self.directory.is_relative_to(self.data_root):
            return self.directory.relative_to(self.data_root).as_posix()
        return self.name

    @property
    def trials_path(self) -> Path:
        return self.directory / TRIALS_FILE

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST_FILE

    @property
    def figures_dir(self) -> Path:
        return self.figures_root / self.key

    def holds_sweep(self) -> bool:
        return self.trials_path.exists() or self.manifest_path.exists()

    # ------------------------------------------------------------ manifest

    def read_manifest(self) -> Manifest:
        path = self.manifest_path
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NO_MANIFEST.error(path=path) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise MANIFEST_NOT_JSON.error(path=path, error=error) from None
        try:
            return Manifest.from_dict(record)
        except CopylabError as error:
            raise MANIFEST_INVALID.error(path=path, error=error) from None

    def write_manifest(self, manifest: Manifest) -> None:
        """Replaces the manifest atomically, so an interruption never leaves half a file."""
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.manifest_path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(manifest.to_dict(), indent=2) + "\n")
        os.replace(temporary, self.manifest_path)

    # ------------------------------------------------------------ trials

    def writer(self) -> TrialWriter:
        self.directory.mkdir(parents=True, exist_ok=True)
        return TrialWriter(self.trials_path)

    def repair_truncated_tail(self) -> bool:
        """Cuts a last line that a crash left unfinished; True if it had to."""
        data = self.trials_path.read_bytes()
        if not data or data.endswith(b"\n"):
            return False
        with self.trials_path.open("r+b") as stream:
            stream.truncate(data.rfind(b"\n") + 1)
        return True

    def trials_sha256(self) -> str:
        digest = hashlib.sha256()
        with self.trials_path.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def read_trials(self, require_ok: bool = True) -> pd.DataFrame:
        """trials.csv checked against the schema and typed (see copylab.record.trials_file.parse_trials)."""
        try:
            data = self.trials_path.read_bytes()
        except FileNotFoundError:
            raise NO_SUCH_FILE.error(path=self.trials_path) from None
        return parse_trials(decode(data, self.trials_path), self.trials_path, require_ok)

    def recorded_trials(self) -> pd.DataFrame:
        """The rows an interrupted sweep has written, to finish it: the file must be copylab's current format."""
        with self.trials_path.open(newline="") as stream:
            header = next(csv.reader(stream), [])
        if tuple(header) != COLUMN_NAMES:
            raise TRIALS_FILE_FOREIGN.error(path=self.trials_path)
        return self.read_trials(require_ok=False)

    def load(self) -> tuple[pd.DataFrame, Manifest]:
        """The trials and the manifest, checked against each other; a ModifiedData warning when trials.csv is
        no longer what the sweep wrote."""
        if not self.directory.is_dir():
            raise NO_SWEEP_DIRECTORY.error(directory=self.directory)
        trials = self.read_trials()
        manifest = self.read_manifest()
        check_manifest(trials, manifest, self.manifest_path)
        warning = self.origin(manifest).warning()
        if warning:
            warnings.warn(ModifiedData(f"{self.directory}: {warning}"), stacklevel=2)
        return trials, manifest

    def origin(self, manifest: Manifest | None = None) -> Origin:
        """Which data and code the sweep's numbers come from (copylab.record.origin)."""
        return Origin.of(manifest or self.read_manifest(), self.trials_sha256())

    # ------------------------------------------------------------ the sampled profile

    def write_profile(self, table: pd.DataFrame, symbols: pd.DataFrame) -> None:
        """The profile of this run's trials, beside what a resumed sweep's earlier runs recorded of other trials."""
        earlier = self.read_profile()
        if isinstance(earlier, pd.DataFrame):
            table = pd.concat([earlier[~earlier["trial_id"].isin(set(table["trial_id"]))], table], ignore_index=True)
            path = self.directory / PROFILE_SYMBOLS_FILE
            if path.is_file():
                before = pd.read_csv(path, keep_default_na=False, dtype={"function": str})
                symbols = pd.concat([before, symbols]).groupby("function", as_index=False)["samples"].sum()
                symbols = symbols.sort_values("samples", ascending=False)
        table[list(PROFILE_COLUMNS)].to_csv(self.directory / PROFILE_FILE, index=False, lineterminator="\n")
        symbols.to_csv(self.directory / PROFILE_SYMBOLS_FILE, index=False, lineterminator="\n")

    def write_unsampled(self, reason: str) -> None:
        """The profile's one line when the sweep could not sample: why."""
        (self.directory / PROFILE_FILE).write_text(f"{NOT_SAMPLED}{reason}\n")

    def read_profile(self) -> pd.DataFrame | str:
        """The profile's rows, or in one line why there are none (never zeros)."""
        path = self.directory / PROFILE_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return "not sampled: the sweep was run by a copylab without the sampler"
        if text.startswith(NOT_SAMPLED):
            return text.strip()
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""], dtype={"trial_id": str})
        if list(frame.columns) != list(PROFILE_COLUMNS):
            raise PROFILE_FILE_FOREIGN.error(path=path)
        return frame.astype(PROFILE_COLUMNS)

    def read_profile_symbols(self) -> pd.DataFrame:
        """The kernel functions no category claimed, with their samples; empty when none or not sampled."""
        path = self.directory / PROFILE_SYMBOLS_FILE
        if not path.is_file():
            return pd.DataFrame({"function": pd.Series(dtype="str"), "samples": pd.Series(dtype="int64")})
        return pd.read_csv(path, keep_default_na=False, dtype={"function": str, "samples": "int64"})

    # ------------------------------------------------------------ analysis tables and figures

    def table_path(self, name: str) -> Path:
        return self.directory / f"{name}.csv"

    def write_table(self, name: str, frame: pd.DataFrame) -> Path:
        path = self.table_path(name)
        tables.typed(name, frame).to_csv(path, index=False, lineterminator="\n")
        return path

    def missing_tables(self) -> list[str]:
        """Analysis tables not written yet, older than trials.csv (the sweep went on after the analysis), or
        written by a copylab whose tables had other columns."""
        written = self.trials_path.stat().st_mtime_ns if self.trials_path.exists() else 0
        return [f"{name}.csv" for name in tables.TABLES if not self._current(name, written)]

    def _current(self, name: str, trials_written_ns: int) -> bool:
        path = self.table_path(name)
        if not path.is_file() or path.stat().st_mtime_ns < trials_written_ns:
            return False
        with path.open(newline="") as file:
            return next(csv.reader(file), []) == list(tables.TABLES[name])

    def read_table(self, name: str) -> pd.DataFrame:
        columns = tables.TABLES[name]
        path = self.table_path(name)
        try:
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str)
        except FileNotFoundError:
            raise TABLE_NOT_WRITTEN.error(path=path, directory=self.directory) from None
        if list(frame.columns) != list(columns):
            raise TABLE_FOREIGN.error(path=path, name=name)
        typed = {}
        for column, dtype in columns.items():
            values = frame[column]
            if dtype == "bool":
                typed[column] = values.map({"True": True, "False": False}).astype("bool")
            elif dtype == "str":
                typed[column] = values.astype("str")
            else:
                typed[column] = pd.to_numeric(values).astype(dtype)
        return pd.DataFrame(typed)

    def save_figures(self, figures: Mapping[str, Figure], metadata: Mapping[str, str]) -> list[Path]:
        """Write every figure as figures/KEY/NAME.png, METADATA in its text chunks (copylab.record.origin); return the
        paths."""
        return save_pngs(self.figures_dir, figures, metadata)

    def figure_path(self, name: str) -> Path:
        """A figure the analysis saved; a one-line error naming the command when it has not."""
        path = self.figures_dir / f"{name}.png"
        if not path.is_file():
            raise FIGURE_NOT_DRAWN.error(path=path, directory=self.directory)
        return path


def save_pngs(directory: Path, figures: Mapping[str, Figure], metadata: Mapping[str, str]) -> list[Path]:
    """Every figure as DIRECTORY/NAME.png with METADATA in its text chunks; the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, figure in figures.items():
        path = directory / f"{name}.png"
        figure.savefig(path, dpi=FIGURE_DPI, metadata=dict(metadata))
        paths.append(path)
    return paths
