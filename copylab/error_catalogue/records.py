"""A sweep's files (its manifest.json, trials.csv and the tables the analysis writes) that copylab cannot read.

Most come from a file edited by hand, cut short by a crash, or written by another version of copylab; a sweep that
copylab wrote and nobody touched reads cleanly.
"""

from __future__ import annotations

from copylab.error_catalogue.entry import SWEEP_FILES, Entry

_RESTORE = "Restore the file as copylab wrote it (`git checkout` it when it is committed), or measure the sweep again."
_ANALYSE = "Run the command the line names; it writes the tables and figures from `trials.csv`."

NO_MANIFEST = Entry(
    "{path}: no manifest (every sweep directory needs manifest.json)",
    "Every sweep's folder holds the `manifest.json` that says how it was measured, and this one lacks it.",
    "Name a sweep's folder (`ls data/`); a folder whose sweep crashed before it started holds none: remove it.",
    SWEEP_FILES,
    sample={"path": "data/sweep/manifest.json"},
)
MANIFEST_NOT_JSON = Entry(
    "{path}: not valid JSON ({error})",
    "The manifest was cut short or edited by hand.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/manifest.json", "error": "Expecting ',' delimiter: line 12 column 5 (char 301)"},
)
MANIFEST_INVALID = Entry(
    "{path}: {error}",
    "The manifest is JSON, but not the manifest copylab writes; the rest of the line names the key at fault.",
    _RESTORE + " A manifest from a newer copylab is read by that copylab.",
    SWEEP_FILES,
    sample={"path": "data/sweep/manifest.json", "error": "key 'parameters.sizes' missing"},
)
MANIFEST_NOT_AN_OBJECT = Entry(
    "expected a JSON object",
    "The manifest holds JSON, but not an object (`{{...}}`).",
    _RESTORE,
    SWEEP_FILES,
)
MANIFEST_NO_PARAMETERS = Entry(
    "key 'parameters' missing or not an object",
    "A manifest records the sweep's settings under `parameters`.",
    _RESTORE,
    SWEEP_FILES,
)
MANIFEST_KEY_NOT_AN_OBJECT = Entry(
    "key '{key}' is not an object",
    "The manifest holds a value where copylab writes an object.",
    _RESTORE,
    SWEEP_FILES,
    sample={"key": "host"},
)
MANIFEST_UNKNOWN_KEY = Entry(
    "unknown key '{key}'",
    "The manifest holds a key copylab does not write (a typo, or a newer copylab).",
    _RESTORE,
    SWEEP_FILES,
    sample={"key": "host.gpu"},
)
MANIFEST_KEY_MISSING = Entry(
    "key '{key}' missing",
    "The manifest lacks a key every manifest has.",
    _RESTORE,
    SWEEP_FILES,
    sample={"key": "host.kernel"},
)
MANIFEST_NOT_A_LIST = Entry(
    "key '{key}' has {kind} {value!r}, not a list",
    "The manifest holds one value where copylab writes a list.",
    _RESTORE,
    SWEEP_FILES,
    sample={"key": "parameters.sizes", "kind": "int", "value": 1024},
)
MANIFEST_WRONG_TYPE = Entry(
    "key '{key}' has {kind} {value!r}, not {expected}",
    "The manifest holds a value of another type than copylab writes there.",
    _RESTORE,
    SWEEP_FILES,
    sample={"key": "parameters.trials", "kind": "str", "value": "5", "expected": "int"},
)
TRIALS_FILE_FOREIGN = Entry(
    "{path}: its columns are not copylab's trials.csv columns; refusing to append",
    "A sweep resumed appends to its `trials.csv`, and this one has other columns: edited, or written by another "
    "version of copylab.",
    "Start a new sweep with another `--name`.",
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv"},
)
PROFILE_FILE_FOREIGN = Entry(
    "{path}: its columns are not those of copylab's profile",
    "The sweep's `profile.csv` (the CPU breakdown) was edited, or written by another version of copylab.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/profile.csv"},
)
TABLE_FOREIGN = Entry(
    "{path}: its columns are not those of copylab's {name} table; analyse the sweep again",
    "The table was written by another version of copylab's analysis, or edited.",
    "Analyse the sweep again: `./inv analyze --data data/NAME`.",
    SWEEP_FILES,
    sample={"path": "data/sweep/summary.csv", "name": "summary"},
)
TABLE_NOT_WRITTEN = Entry(
    "{path}: not written yet (run ./inv analyze --data {directory})",
    "The analysis's tables are written by `./inv analyze`, and this sweep was not analysed.",
    _ANALYSE,
    SWEEP_FILES,
    sample={"path": "data/sweep/summary.csv", "directory": "data/sweep"},
)
FIGURE_NOT_DRAWN = Entry(
    "{path}: not drawn yet (run ./inv analyze --data {directory})",
    "The figures are drawn by `./inv analyze`, and this sweep was not analysed.",
    _ANALYSE,
    SWEEP_FILES,
    sample={"path": "data/sweep/figures/throughput.png", "directory": "data/sweep"},
)
EMPTY_TRIALS_FILE = Entry(
    "{path}: empty file (no header)",
    "The sweep's `trials.csv` is empty: the sweep crashed before its first trial, or the file was emptied.",
    "Measure the sweep again.",
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv"},
)
NOT_UTF8 = Entry(
    "{path}: not UTF-8 text ({reason} at byte {at})",
    "The file holds bytes that are not text: damaged, or saved by a program in another encoding.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "reason": "invalid start byte", "at": 4096},
)
NOT_CSV = Entry(
    "{path}: line {line} is not valid CSV ({error})",
    "The line is not comma-separated values as copylab writes them: edited by hand, or damaged.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17, "error": "unexpected end of data"},
)
WRONG_FIELD_COUNT = Entry(
    "{path}: line {line} has {fields} fields, the header has {header}{cut}",
    "A line has more or fewer values than the header names; at the end of the file, the writer crashed mid-line.",
    "Delete the broken last line and `--resume` the sweep to measure that trial again, or restore the file.",
    SWEEP_FILES,
    sample={
        "path": "data/sweep/trials.csv",
        "line": 120,
        "fields": 12,
        "header": 64,
        "cut": " (truncated: the writer probably crashed mid-write)",
    },
)
TRUNCATED_LINE = Entry(
    "{path}: line {line} is truncated (no newline at the end of the file: the writer probably crashed mid-write)",
    "copylab ends every line it writes; a last line without its end was cut short by a crash.",
    "Delete the broken last line and `--resume` the sweep to measure that trial again.",
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 120},
)
COLUMNS_DUPLICATED = Entry(
    "{path}: duplicated column(s) {columns}",
    "The header names a column twice.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "columns": "throughput_bps"},
)
COLUMNS_MISSING = Entry(
    "{path}: missing column(s) {columns}",
    "The file lacks columns every `trials.csv` has.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "columns": "status"},
)
COLUMNS_UNKNOWN = Entry(
    "{path}: unknown column(s) {columns} (not in copylab.declarations.schema)",
    "The file has columns copylab does not write: added by hand, or by a newer copylab.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "columns": "note"},
)
REQUIRED_EMPTY = Entry(
    "{path}: line {line}: required column {column} is empty",
    "Every trial records that column, and this line has it empty.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17, "column": "trial_id"},
)
BAD_VALUE = Entry(
    "{path}: line {line}: column {column} value {value!r} is {why}",
    "A value is not of the column's type, or outside what copylab writes there.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17, "column": "threads", "value": "1.5", "why": "not an integer"},
)
UNKNOWN_VALUE = Entry(
    "{path}: line {line}: unknown {column} {value!r} (expected one of {allowed})",
    "A column that takes a fixed list of names holds another.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17, "column": "status", "value": "done", "allowed": "ok, failed"},
)
FOREIGN_IMPLEMENTATION = Entry(
    "{path}: line {line}: {implementation} belongs to the {belongs} experiment, not {experiment}",
    "A trial names an implementation of another experiment than its own.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17},
)
MODEL_MISMATCH = Entry(
    "{path}: line {line}: model {model!r} is not the implementation",
    "A server's trial records its model, which is the implementation's name.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17},
)
BELOW_ONE = Entry(
    "{path}: line {line}: {column} must be at least 1",
    "A count of threads, connections or trials is never below 1.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 17, "column": "threads"},
)
MEASURED_TWICE = Entry(
    "{path}: line {line}: trial_id {trial!r} measured twice",
    "Every trial has an id of its own, and two lines hold the same one: lines copied, or two files joined.",
    _RESTORE,
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "line": 90, "trial": "b3-two_copy-4096-t1"},
)
NO_OK_TRIALS = Entry(
    "{path}: no ok trials ({rows} rows, none with status ok)",
    "Every trial of the sweep failed, so there is nothing to analyse.",
    "Read the `error` column: the first trials say why; fix that, then `--resume` the sweep.",
    SWEEP_FILES,
    sample={"path": "data/sweep/trials.csv", "rows": 120},
)
OTHER_SWEEP = Entry(
    "{where}: sweep '{sweep}' but trials.csv has sweep {found}",
    "The `trials.csv` and the `manifest.json` of the folder belong to two different sweeps: a file copied in from "
    "another.",
    "Put each sweep's two files together in a folder of its own.",
    SWEEP_FILES,
    sample={"where": "data/sweep", "sweep": "sweep", "found": "['quick']"},
)
OTHER_EXPERIMENT = Entry(
    "{where}: a {experiment} sweep but trials.csv has experiment {found}",
    "The manifest and the trials disagree on the experiment: a file copied in from another sweep.",
    "Put each sweep's two files together in a folder of its own.",
    SWEEP_FILES,
    sample={"where": "data/sweep"},
)
TOO_MANY_REPETITIONS = Entry(
    "{where}: parameters.{setting} allow {allowed} repetitions but trials.csv has {most}",
    "A configuration has more trials than the manifest's settings allow: two sweeps' trials joined.",
    "Put each sweep's trials in a folder of its own.",
    SWEEP_FILES,
    sample={"where": "data/sweep", "setting": "trials", "allowed": 5, "most": 10},
)
SCHEMA_LACKS = Entry(
    "{where}: schema version {schema} but trials.csv lacks {columns}",
    "The manifest records the version of the columns `trials.csv` was written with, and the file lacks some.",
    _RESTORE,
    SWEEP_FILES,
    sample={"where": "data/sweep", "columns": "layout"},
)
NOT_IN_MANIFEST = Entry(
    "{where}: trials.csv has {what} {values} that the manifest does not list",
    "The trials hold values the sweep's settings do not name: trials of another sweep, or a manifest edited.",
    _RESTORE,
    SWEEP_FILES,
    sample={"where": "data/sweep", "what": "sizes", "values": "3000"},
)
UNKNOWN_CROSSOVER_STATUS = Entry(
    "crossovers.csv: unknown status {status!r}",
    "The sweep's `crossovers.csv`, written by `./inv analyze`, holds a status the analysis never writes: it was "
    "edited, or written by another version of copylab.",
    "Analyse the sweep again: `./inv analyze --data data/NAME`.",
    SWEEP_FILES,
    sample={"status": "maybe"},
)
