"""What reads sweeps already measured: comparing two, the report and its notebooks, the explorer, `./inv bench`,
and copylab's functions called from a notebook."""

from __future__ import annotations

from copylab.error_catalogue.entry import BENCH, COMPARE, EXPLORER, LIBRARY, REPORT, Entry

SWEEPS_DIFFER = Entry(
    "{a} and {b} were measured {how}: {details}; compare sweeps of one profile, or pass --shared-only to compare "
    "what they share",
    "`./inv compare` reads both manifests: sweeps of different grids (sizes, threads, implementations, ...) hold "
    "different configurations, and sweeps of different methods (warm-up, window, congestion control, buffers, ...) "
    "measure the same configuration differently.",
    "Compare a sweep with one of the same profile measured by the same copylab (docs/sweeps.md gives the command "
    "that measured each reference), or pass `--shared-only`: the configurations both hold are compared, and a line "
    "says what was left out and which method differs.",
    COMPARE,
    sample={
        "a": "data/reference",
        "b": "data/quick-20261128T101500",
        "how": "on different grids",
        "details": "sizes 1KiB,4KiB,16KiB,64KiB,256KiB against 1KiB,2KiB,4KiB,8KiB,16KiB,32KiB,64KiB,128KiB,256KiB",
    },
)
EXPLORER_URL = Entry(
    "copylab explorer: {url}",
    "`./inv explore` and `./inv lab` listen on 127.0.0.1 only, so a browser on another machine cannot open that "
    "address.",
    "Forward the port over SSH from the machine with the browser (`ssh -L 8866:127.0.0.1:8866 USER@HOST`, then, "
    "on HOST, `./inv explore`), and open the printed URL there; with `--port P`, forward P instead.",
    EXPLORER,
    kind="note",
    sample={"url": "http://127.0.0.1:8866/?token=5f0c1e..."},
)
OTHER_EXPERIMENTS = Entry(
    "{a} is a {experiment_a} sweep and {b} a {experiment_b} sweep: only two sweeps of one experiment can be compared",
    "Two experiments measure different things (a copy's cost, a server's), so their sweeps share no configuration.",
    "Compare two sweeps of one experiment (`manifest.json` names each sweep's).",
    COMPARE,
    sample={"a": "data/quick", "b": "data/servers"},
)
NOTHING_SHARED = Entry(
    "{a} and {b} have no configuration in common: nothing to compare",
    "With `--shared-only`, only the configurations both sweeps measured are compared, and they share none.",
    "Compare sweeps that measured some of the same sizes, threads and implementations.",
    COMPARE,
    sample={"a": "data/quick", "b": "data/servers-small"},
)
REPORT_NEEDS_MAIN = Entry(
    "a report needs a {experiment} sweep (./inv run-sweep): its study parts describe one",
    "The report's study answers its questions from a sweep of the main experiment, and none of the sweeps given "
    "is one.",
    "Add a sweep of that experiment to `--data`, or run `./inv report` without `--data` to measure one.",
    REPORT,
)
PDF_TOOLS_MISSING = Entry(
    "{tools} not found: the PDF needs texlive-xetex and pandoc (./inv installs them)",
    "The report's PDF is typeset by XeLaTeX from what pandoc converts, and one of them is missing.",
    "`sudo apt-get install texlive-xetex pandoc`, or run `./inv` once as root, which installs them.",
    REPORT,
    sample={"tools": "xelatex"},
)
LATEX_FAILED = Entry(
    "xelatex could not typeset the report: {error}",
    "XeLaTeX stopped on the report; the line gives its first error, most often a missing font or LaTeX package.",
    "Install the TeX packages copylab needs (`sudo apt-get install texlive-xetex texlive-fonts-recommended "
    "texlive-plain-generic`); the HTML report next to the PDF is written anyway.",
    REPORT,
    sample={"error": "! LaTeX Error: File `tcolorbox.sty' not found."},
)
NOT_ANALYSED = Entry(
    "{directory}: no current {tables} (run ./inv analyze --data {directory} first)",
    "The report reads the tables `./inv analyze` writes, and this sweep's are missing or older than its trials.",
    "Run the command the line names, then the report again.",
    REPORT,
    sample={"directory": "data/sweep", "tables": "summary.csv, comparisons.csv"},
)
NO_STREAM_THROUGHPUT = Entry(
    "sweep {name}: no stream throughput in summary.csv",
    "The report's study is told from the stream workload's throughput, and the sweep measured none (only `rr`, "
    "or every stream trial failed).",
    "Measure a sweep with the stream workload (`--workloads stream,rr`), or read why its stream trials failed.",
    REPORT,
    sample={"name": "rr-only"},
)
NOTEBOOK_FAILED = Entry(
    "{label} notebook failed in cell {cell}: {error}: {message} (see {output})",
    "A cell of the notebook raised an error; the executed notebook the line names holds the whole traceback.",
    "Open the executed notebook at that cell; an error from copylab itself there is one of those on this page.",
    REPORT,
    sample={
        "label": "report",
        "cell": 7,
        "error": "CopylabError",
        "message": "data/sweep: not a sweep directory (no trials.csv)",
        "output": "report/report.ipynb",
    },
)
NOTEBOOK_UNFINISHED = Entry(
    "{label} notebook did not finish ({error}; see {output})",
    "The notebook's kernel died (out of memory, most often) or a cell ran past its time.",
    "Free memory (close other programs) and run again; the executed notebook shows the last cell run.",
    REPORT,
    sample={"label": "report", "error": "DeadKernelError", "output": "report/report.ipynb"},
)
EXPLORER_EXITED = Entry(
    "the explorer's server exited with {status} before it answered on port {port}",
    "The server behind `./inv explore` or `./inv lab` stopped as it started, most often because the port is taken.",
    "Give another port with `--port`, or end the program that holds it (`ss -ltnp` names it).",
    EXPLORER,
    sample={"status": 1, "port": 8866},
)
EXPLORER_SILENT = Entry(
    "the explorer's server did not answer on port {port} within {seconds} s",
    "The server started but did not answer in time: a machine too loaded, or a firewall on loopback.",
    "Run again on a quieter machine.",
    EXPLORER,
    sample={"port": 8866, "seconds": 60},
)
BENCH_TRIAL_FAILED = Entry(
    "bench trial {trial} failed: {error}",
    "`./inv bench` measures copylab's own costs with trials of its own, and one failed; the line ends with its error.",
    "Read the error; `./inv bench` needs root and the programs built (`./inv build`).",
    BENCH,
    sample={"trial": "bench-sampling-0", "error": "server exited 1"},
)
BENCH_NO_REFERENCE = Entry(
    "{reference} holds no sweep to replay",
    "`./inv bench` times the analysis on a committed reference sweep, and it is missing.",
    "Restore it: `git checkout data/`.",
    BENCH,
    sample={"reference": "data/reference"},
)
BENCH_SWEEP_FAILED = Entry(
    "bench sweep {name}: {failure}",
    "A sweep `./inv bench` runs had a failed trial; the line ends with the first failure.",
    "Read the failure; `./inv bench` needs root and an idle machine.",
    BENCH,
    sample={"name": "bench-transport-0", "failure": "two_copy 4096 B: server exited 1"},
)
BENCH_REPORT_FAILED = Entry(
    "./inv report failed: {error}",
    "`./inv bench` times a whole `./inv report`, and the report failed; the line ends with its last line.",
    "Run `./inv report` on its own to see the whole error.",
    BENCH,
    sample={"error": "copylab: error: xelatex, pandoc not found: the PDF needs texlive-xetex and pandoc"},
)
BENCH_ONE_VALUE = Entry(
    "{name} has one {axis} value: no slider to move",
    "`./inv bench` times the explorer's redraw as its slider moves, and the reference sweep gives the slider one "
    "value.",
    "Restore the committed reference: `git checkout data/`.",
    BENCH,
    sample={"name": "reference", "axis": "size"},
)
CONFIDENCE_OUT_OF_RANGE = Entry(
    "confidence must be between 0 and 1, not {confidence}",
    "A confidence level is a fraction, such as 0.95.",
    "Give a fraction between 0 and 1.",
    LIBRARY,
    sample={"confidence": 95},
)
BAD_PAIRS = Entry(
    "pairs must be (challenger, baseline) implementations",
    "The comparisons are given as pairs of two implementation names.",
    'Pass a list of pairs: `pairs=[("zero_copy", "two_copy")]`.',
    LIBRARY,
)
UNKNOWN_CI_METHOD = Entry(
    "unknown confidence interval method {method!r} (t or bootstrap)",
    "copylab computes a confidence interval by Student's t or by bootstrap.",
    'Pass `ci="t"` or `ci="bootstrap"`.',
    LIBRARY,
    sample={"method": "normal"},
)
UNKNOWN_METRICS = Entry(
    "unknown metric(s) {names} (known: {known})",
    "A metric is a column copylab derives from the trials, and these are none of them.",
    "Choose among the metrics listed.",
    LIBRARY,
    sample={"names": "speed", "known": "throughput_gbps, cycles_per_byte"},
)
METRICS_NOT_ADDED = Entry(
    "metric column(s) {names} missing: apply copylab.declarations.metrics.add_metrics first",
    "The trials as read from `trials.csv` hold the raw counts; the derived metrics are added by a function.",
    "Call `copylab.declarations.metrics.add_metrics` on the trials first.",
    LIBRARY,
    sample={"names": "throughput_gbps"},
)
