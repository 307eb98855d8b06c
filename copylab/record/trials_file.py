"""The trials.csv format: a text checked against copylab.declarations.schema and typed, and its agreement with the
manifest.

Pure functions of text and frames; copylab.record.store reads the files.  Every problem is a CopylabError whose
one line names the file and, where there is one, the line.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from copylab import experiments
from copylab.declarations import implementations, schema
from copylab.error_catalogue import (
    BAD_VALUE,
    BELOW_ONE,
    COLUMNS_DUPLICATED,
    COLUMNS_MISSING,
    COLUMNS_UNKNOWN,
    EMPTY_TRIALS_FILE,
    FOREIGN_IMPLEMENTATION,
    MEASURED_TWICE,
    MODEL_MISMATCH,
    NO_OK_TRIALS,
    NOT_CSV,
    NOT_IN_MANIFEST,
    NOT_UTF8,
    OTHER_EXPERIMENT,
    OTHER_SWEEP,
    REQUIRED_EMPTY,
    SCHEMA_LACKS,
    TOO_MANY_REPETITIONS,
    TRUNCATED_LINE,
    UNKNOWN_VALUE,
    WRONG_FIELD_COUNT,
)
from copylab.record.manifest import Manifest

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _allowed_values() -> dict[str, tuple[str, ...]]:
    return {
        "implementation": implementations.names(),
        "workload": schema.WORKLOADS,
        "pinning": schema.PINNINGS,
        "receive": schema.RECEIVE_MODES,
        "experiment": experiments.names(),
        "status": schema.STATUSES,
    }


def decode(data: bytes, path: Path) -> str:
    """The UTF-8 text of a trials file; an empty one is refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NOT_UTF8.error(path=path, reason=error.reason, at=error.start) from None
    if not text.strip():
        raise EMPTY_TRIALS_FILE.error(path=path)
    return text


def parse_trials(text: str, path: Path, require_ok: bool = True) -> pd.DataFrame:
    """TEXT (the contents of PATH) checked against schema.COLUMNS and typed.

    str columns load as pandas strings, required int columns as int64, every other numeric column as
    float64 so that an unmeasured (empty) value stays NaN.  A file written by an older copylab lacks the
    columns added since; they load empty and are listed in the frame's attrs["absent_columns"].  With
    REQUIRE_OK, a file without a single ok trial is refused (there is nothing to analyse).
    """
    header, lines = _check_rows(text, path)
    _check_header(header, path)
    raw = pd.read_csv(
        io.StringIO(text),
        dtype={name: str for name in header},
        keep_default_na=False,
        na_values=[""],
        skip_blank_lines=False,
    )
    # Index by file line while validating, so every message can name the line.
    raw.index = pd.Index(lines, name="line")
    if "align_fields" in header and "layout" not in header:  # schema 3-4: a flag, before layout was an axis
        aligned = raw.pop("align_fields").str.lower().isin(_TRUE)
        raw["layout"] = np.where(aligned, "aligned", "fields")
        header = [name for name in header if name != "align_fields"]
    absent = [name for name in schema.COLUMN_NAMES if name not in header]
    for name in absent:
        column = schema.COLUMN_BY_NAME[name]
        if column.legacy_column:
            raw[name] = raw[column.legacy_column]
        else:
            raw[name] = pd.Series(column.legacy or np.nan, index=raw.index, dtype=object)
    trials = pd.DataFrame({name: _convert(raw[name], column, path) for name, column in schema.COLUMN_BY_NAME.items()})
    _check_values(trials, path, require_ok)
    trials = trials.reset_index(drop=True)
    trials.attrs["absent_columns"] = absent
    return trials


def check_manifest(trials: pd.DataFrame, manifest: Manifest, where: Path) -> None:
    """Raise CopylabError unless the trials are what the manifest says was run.

    Every sweep name, implementation, workload, size, thread count and pinning in the rows must be one the
    manifest lists; no configuration may have more repetitions than its trials setting allows; the file may
    not lack columns of the schema version the manifest records.  (A file changed since its sweep ended is used
    and said to be: copylab.record.origin.)
    """
    parameters = manifest.parameters
    sweeps = set(trials["sweep"])
    if sweeps != {manifest.sweep}:
        raise OTHER_SWEEP.error(where=where, sweep=manifest.sweep, found=sorted(sweeps))
    stream_sizes = set(parameters.sizes)
    rr_sizes = set(parameters.rr_sizes) | stream_sizes
    experiments = set(trials["experiment"])
    if experiments - {parameters.experiment}:
        raise OTHER_EXPERIMENT.error(where=where, experiment=parameters.experiment, found=sorted(experiments))
    allowed: dict[str, set[Any]] = {
        "implementation": set(parameters.implementations),
        "workload": set(parameters.workloads),
        "threads": set(parameters.threads),
        "pinning": set(parameters.pinning),
    }
    for column, values in allowed.items():
        _check_subset(trials[column], values, column, where)
    if parameters.connections:
        _check_subset(trials["connections"], set(parameters.connections), "connections", where)
    stream = trials.loc[trials["workload"] == "stream", "size_bytes"]
    if parameters.budget_s is not None and stream_sizes:
        # a budgeted sweep also measures sizes its allocator adds inside a crossover's bracket, within the grid's range
        stream_sizes |= {size for size in set(stream) if min(parameters.sizes) < size < max(parameters.sizes)}
    _check_subset(stream, stream_sizes, "stream size", where)
    _check_subset(trials.loc[trials["workload"] == "rr", "size_bytes"], rr_sizes, "rr size", where)
    most = int(trials["repetition"].max()) if len(trials) else 0
    if parameters.budget_s is not None:  # the first pass, the blocks of undecided comparisons, the others'
        repetitions, setting = 2 * parameters.trials + parameters.max_trials, "trials + max_trials + trials"
    elif parameters.target_ci is not None:
        repetitions, setting = parameters.max_trials, "max_trials"
    else:
        repetitions, setting = parameters.trials, "trials"
    if most > repetitions:
        raise TOO_MANY_REPETITIONS.error(where=where, setting=setting, allowed=repetitions, most=most)
    lacking = [
        name
        for name in trials.attrs.get("absent_columns", [])
        if schema.COLUMN_BY_NAME[name].since <= manifest.schema_version
    ]
    if lacking:
        raise SCHEMA_LACKS.error(where=where, schema=manifest.schema_version, columns=", ".join(lacking))


def _check_rows(text: str, path: Path) -> tuple[list[str], list[int]]:
    """Return the header and the first file line of every record.

    Raises on a record with the wrong number of fields and on a last line
    without its newline, the traces of a writer that crashed mid-write.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    lines: list[int] = []
    try:
        header = next(reader)
        start = reader.line_num + 1
        for row in reader:
            if len(row) != len(header):
                cut = " (truncated: the writer probably crashed mid-write)" if _at_end(text, reader) else ""
                raise WRONG_FIELD_COUNT.error(path=path, line=start, fields=len(row), header=len(header), cut=cut)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as error:
        raise NOT_CSV.error(path=path, line=reader.line_num, error=error) from None
    if not text.endswith(("\n", "\r")):
        raise TRUNCATED_LINE.error(path=path, line=reader.line_num)
    return header, lines


def _at_end(text: str, reader: Any) -> bool:
    read: int = reader.line_num
    return read >= len(text.splitlines())


def _check_header(header: list[str], path: Path) -> None:
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise COLUMNS_DUPLICATED.error(path=path, columns=", ".join(duplicated))
    missing = [column.name for column in schema.COLUMNS if column.since == 1 and column.name not in header]
    if missing:
        raise COLUMNS_MISSING.error(path=path, columns=", ".join(missing))
    foreign = [name for name in header if name not in schema.COLUMN_BY_NAME and name != "align_fields"]
    if foreign:
        raise COLUMNS_UNKNOWN.error(path=path, columns=", ".join(foreign))


def _convert(values: pd.Series, column: schema.Column, path: Path) -> pd.Series:
    if column.required and values.isna().any():
        raise REQUIRED_EMPTY.error(path=path, line=_line(values.isna()), column=column.name)
    if column.kind == "str":
        return values
    if column.kind == "bool":
        lowered = values.str.lower()
        bad = values.notna() & ~lowered.isin(_TRUE | _FALSE)
        _raise_bad(bad, values, column, path, "not true/false")
        return lowered.isin(_TRUE).astype(object).where(values.notna()).astype("boolean")
    numbers = pd.to_numeric(values, errors="coerce")
    bad = values.notna() & ~np.isfinite(numbers.fillna(0.0))
    bad |= values.notna() & numbers.isna()
    _raise_bad(bad, values, column, path, "not a finite number (leave unmeasured values empty)")
    if column.kind == "int":
        fractional = numbers.notna() & (numbers != numbers.round())
        _raise_bad(fractional, values, column, path, "not an integer")
        if column.required:
            return numbers.astype("int64")
    return numbers.astype("float64")


def _raise_bad(bad: pd.Series, values: pd.Series, column: schema.Column, path: Path, why: str) -> None:
    if bad.any():
        value = values[bad].iloc[0]
        raise BAD_VALUE.error(path=path, line=_line(bad), column=column.name, value=value, why=why)


def _line(mask: pd.Series) -> int:
    """File line of the first flagged row (the frame is indexed by line while loading)."""
    return int(mask.index[mask.to_numpy()][0])


def _check_values(trials: pd.DataFrame, path: Path, require_ok: bool) -> None:
    for column, allowed in _allowed_values().items():
        bad = ~trials[column].isin(allowed)
        if bad.any():
            raise UNKNOWN_VALUE.error(
                path=path, line=_line(bad), column=column, value=trials[column][bad].iloc[0], allowed=", ".join(allowed)
            )
    belongs = trials["implementation"].map(lambda name: implementations.get(name).experiment)
    bad = trials["experiment"] != belongs
    if bad.any():
        raise FOREIGN_IMPLEMENTATION.error(
            path=path,
            line=_line(bad),
            implementation=trials["implementation"][bad].iloc[0],
            belongs=belongs[bad].iloc[0],
            experiment=trials["experiment"][bad].iloc[0],
        )
    bad = trials["model"].notna() & (trials["model"] != trials["implementation"])
    if bad.any():
        raise MODEL_MISMATCH.error(path=path, line=_line(bad), model=trials["model"][bad].iloc[0])
    for column in ("size_bytes", "threads", "connections", "repetition"):
        bad = trials[column] < 1
        if bad.any():
            raise BELOW_ONE.error(path=path, line=_line(bad), column=column)
    # --resume retries failed trials under their planned id: failed attempts may repeat, a measurement may not.
    duplicated = trials["trial_id"].where(trials["status"] == "ok").dropna().duplicated()
    if duplicated.any():
        duplicated = duplicated.reindex(trials.index, fill_value=False)
        repeated = trials["trial_id"][duplicated].iloc[0]
        raise MEASURED_TWICE.error(path=path, line=_line(duplicated), trial=repeated)
    if require_ok and not (trials["status"] == "ok").any():
        raise NO_OK_TRIALS.error(path=path, rows=len(trials))


def _check_subset(values: pd.Series, allowed: set[Any], what: str, where: Path) -> None:
    foreign = sorted(set(values) - allowed, key=str)
    if foreign:
        shown = ", ".join(str(value) for value in foreign[:5])
        raise NOT_IN_MANIFEST.error(where=where, what=what, values=shown)
