"""Before anything runs, and the files and folders a task reads and writes."""

from __future__ import annotations

from copylab.error_catalogue.entry import CHOWN, FILES, REPORT, SETUP, Entry

MISSING_PACKAGES = Entry(
    "missing Debian packages: {packages}; run ./inv as root once, or: sudo apt-get install {packages}",
    "`./inv` checks the Debian packages copylab needs before every task and refuses every task until all are "
    "installed; without root it cannot install them.",
    "Install them with the `sudo apt-get install` command the line gives (the whole list is in "
    "[testbeds.md](testbeds.md#debian-packages)), then run `./inv` as yourself. `sudo ./inv` would install them "
    "too, but leave `.venv` owned by root. copylab needs Debian's `apt`.",
    SETUP,
    sample={"packages": "bpftrace iperf3"},
)
C_BUILD_FAILED = Entry(
    "the C build failed: {reason}",
    "`gcc` or `make` stopped: the reason is the last line they printed. A missing compiler or header (`gcc`, "
    "`liburing-dev`) is the usual cause on a new machine; `Permission denied`, a `build/` left owned by root by a "
    f"`sudo ./inv` (then: `{CHOWN}`).",
    "Run `make -C csrc` to see the whole output; `sudo apt-get install gcc make libc6-dev liburing-dev` installs "
    "what the build needs.",
    SETUP,
    sample={"reason": "csrc/send_uring_send.c:12:10: fatal error: liburing.h: No such file or directory"},
)
NOT_BUILT = Entry(
    "{path} is not built: run `{command}` first",
    "Every task that runs the C programs builds them first, so this line comes only when they went missing since "
    "(`./inv clean`, or `build/` removed while a task ran) or when copylab's Python functions are called directly.",
    "Run the command the line names.",
    SETUP,
    sample={"path": "build/bin/two_copy_server", "command": "./inv build"},
)
SANITIZER_UNKNOWN = Entry(
    "--sanitize must be one of {choices}, not {asked!r}",
    "`--sanitize` builds instrumented copies of the programs, with one of gcc's sanitizers.",
    "Name one of those listed.",
    SETUP,
    sample={"choices": "address, undefined, thread", "asked": "memory"},
)
NOT_WRITABLE = Entry(
    "{path} is not writable by this user: choose a data directory it can write",
    "The folder belongs to another user, most often root after a `sudo ./inv report` or `sudo ./inv test`: "
    "`.venv`, `build/`, `data/`, `figures/` and `report/` are then root's, and later runs as yourself fail.",
    f"Give them back to yourself: `{CHOWN}`. copylab needs root for nothing `./inv report` does.",
    FILES,
    sample={"path": "data"},
)
ALREADY_HOLDS = Entry(
    "{directory} already holds a sweep: pass --resume to finish it, or choose another --name",
    "`./inv run-sweep --name NAME` writes `data/NAME/`, and a sweep is never overwritten.",
    "Add `--resume` to run exactly the trials of that sweep not yet ok, or give another `--name`.",
    FILES,
    sample={"directory": "data/sweep"},
)
NOT_A_SWEEP = Entry(
    "{directory}: not a sweep directory (no {missing})",
    "A task that reads sweeps (`report --data`, `compare`, `analyze`, `explore`) was given a folder that holds no "
    "sweep: a sweep's folder holds its `trials.csv` and `manifest.json`.",
    "Name a folder that `./inv run-sweep` or `./inv report` wrote, `data/NAME` (`ls data/` lists them), or a "
    "committed reference, `data/reference`.",
    FILES,
    sample={"directory": "data/quick", "missing": "trials.csv"},
)
NO_REPORT = Entry(
    "no report to hand in ({missing} missing in {directory}): run ./inv report first",
    "`./inv handin` packs the report that `./inv report` wrote, with the sweeps it was rendered from.",
    "Run `./inv report` (or render one from existing sweeps with `./inv report --data ...`), then `./inv handin`.",
    FILES,
    sample={"missing": "report.pdf, report.html, report.ipynb", "directory": "report"},
)
REPORT_SWEEP_GONE = Entry(
    "the report was rendered from {directory}, which no longer holds a sweep",
    "`./inv handin` packs the sweeps the report was rendered from, as its executed notebook "
    "(`report/report.ipynb`) names them, and one of them was moved or removed since.",
    "Put the sweep back, or render the report again from the sweeps you have (`./inv report --data ...`).",
    FILES,
    sample={"directory": "data/quick-20261128T034429"},
)
REPORT_SWEEPS_UNKNOWN = Entry(
    "{notebook}: cannot tell which sweeps the report used ({reason})",
    "The executed report notebook lacks the parameters papermill records in it: it was edited, or written by "
    "something other than `./inv report`.",
    "Render the report again (`./inv report`, or `./inv report --data ...`), then `./inv handin`.",
    FILES,
    sample={"notebook": "report/report.ipynb", "reason": "'papermill'"},
)
NO_SWEEP_DIRECTORY = Entry(
    "{directory}: no such sweep directory",
    "A task was given a sweep's folder that does not exist.",
    "Check the name: `ls data/` lists the sweeps this checkout holds.",
    FILES,
    sample={"directory": "data/quik"},
)
NO_SUCH_FILE = Entry(
    "{path}: no such file",
    "A task was given a file that does not exist, or a sweep's folder lacks a file every sweep has.",
    "Check the path; a sweep's folder that lost its `trials.csv` cannot be read, measure it again.",
    FILES,
    sample={"path": "data/quick/trials.csv"},
)
NO_DATA_DIRECTORY = Entry(
    "--data: {directory}: no such directory",
    "`--data` names a folder that does not exist.",
    "Name a sweep's folder, `data/NAME` (`ls data/` lists them).",
    FILES,
    sample={"directory": "data/quik"},
)
NOTHING_TO_RESUME = Entry(
    "--resume: {directory} holds no sweep to resume",
    "`--resume` finishes a sweep already started, and the folder holds none (no `manifest.json`).",
    "Leave out `--resume` to start the sweep, or check the `--name`.",
    FILES,
    sample={"directory": "data/sweep"},
)
RESUME_UNREADABLE = Entry(
    "--resume: {error}",
    "The sweep to finish has a `manifest.json` copylab cannot read; the rest of the line says what is wrong.",
    "Start a new sweep with another `--name`; a manifest edited by hand can be restored with `git checkout` when "
    "it is committed.",
    FILES,
    sample={"error": "data/sweep/manifest.json: not valid JSON (Expecting value: line 1 column 1 (char 0))"},
)
RESUME_OTHER_SCHEMA = Entry(
    "--resume: {directory} was written by a copylab with trials.csv schema version {found} (this one writes "
    "{schema}): finish it with that copylab or start a new sweep",
    "A sweep is finished by the copylab that started it: another version of copylab writes other columns.",
    "Check out the copylab that started the sweep (its commit is in `manifest.json`) to finish it, or start a new "
    "sweep with another `--name`.",
    FILES,
    sample={"directory": "data/sweep"},
)
NO_SWEEP_GIVEN = Entry(
    "no sweep directory given",
    "A report is rendered from sweeps, and none was named.",
    "Name the sweeps with `--data data/NAME,...`, or run `./inv report` without `--data` to measure them.",
    REPORT,
)
