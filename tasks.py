"""copylab's tasks (run them through ./inv, which prepares the environment first).

Every task turns a CopylabError into one line on stderr and exit status 2.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import secrets
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from inspect import Parameter, Signature
from pathlib import Path
from typing import Any

from invoke import Exit, task

from copylab.errors import CopylabError
from copylab.paths import DATA, NOTEBOOKS, REFERENCE_DATA, REPORT, ROOT
from copylab.record.origin import ModifiedData


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def one_line_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input and unusable environments end in one line and a non-zero exit, never a traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # SIGTERM ends a task like Ctrl-C, so every clean-up (namespaces, notebook kernels, temporary files) runs;
        # and Ctrl-C interrupts even where the task was started with SIGINT ignored (a background job).
        previous = signal.signal(signal.SIGTERM, _terminated)
        previous_interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _one_line_warning
                return function(*args, **kwargs)
        except CopylabError as error:
            raise Exit(f"copylab: error: {error}", code=2) from None
        except KeyboardInterrupt:
            raise Exit("copylab: interrupted; everything measured so far is saved", code=130) from None
        finally:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_interrupt)

    return wrapper


_PYTHON_SHOWWARNING = warnings.showwarning


def _one_line_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """copylab's own warnings (data used although modified) in one line, like its errors."""
    if issubclass(category, ModifiedData):
        print(f"copylab: warning: {message}", file=sys.stderr)
    else:
        _PYTHON_SHOWWARNING(message, category, *args, **kwargs)


def _say_if_modified(store: Any) -> None:
    """Warn when a sweep's trials.csv changed since its sweep ended (its analysis runs in a notebook's kernel,
    whose warnings the command line would not show)."""
    warning = store.origin().warning()
    if warning:
        warnings.warn(ModifiedData(f"{store.directory}: {warning}"), stacklevel=2)


def _list(text: str | None, convert: Callable[[str], Any] = str) -> list[Any] | None:
    """'64,1K,4K' -> [64, 1024, 4096]; None stays None (= not given)."""
    if text is None:
        return None
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise CopylabError(f"empty item in the list {text!r}")
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise CopylabError(f"{text!r} is not a comma-separated list of numbers") from None


def _number(label: str, text: str | None, convert: Callable[[str], Any]) -> Any:
    if text is None:
        return None
    try:
        return convert(str(text))
    except ValueError:
        raise CopylabError(f"--{label}: {text!r} is not a number") from None


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


# pytest's exit status when no test matched
NOTHING_COLLECTED = 5


@task(help={"sanitize": "address, undefined or thread: an instrumented build in build/sanitize-NAME"})
@one_line_errors
def build(c, sanitize=None):
    """Compile the C programs (gcc -O2 -Wall -Wextra -Werror) into build/bin."""
    from copylab.programs.build import build as run_build

    out = run_build(sanitize)
    print(f"built {out / 'bin'}")


def _pair(server: str, client: str, mtu: int, optmem_max: int):
    from copylab.testbeds.netns import NamespacePair

    return NamespacePair(server, client, mtu=mtu, optmem_max=optmem_max)


@task(name="netns-up")
@one_line_errors
def netns_up(c, server="copylab_srv", client="copylab_cli", mtu=1500, optmem_max=131072):
    """Create the two namespaces and their veth link (root)."""
    from copylab.testbeds import netns

    netns.up(_pair(server, client, int(mtu), int(optmem_max)))
    for entry in netns.status():
        print(entry)


@task(name="netns-down")
@one_line_errors
def netns_down(c):
    """Remove every namespace copylab created (root); others are never touched."""
    from copylab.testbeds import netns

    netns.require_root("netns-down")
    removed = netns.down()
    print(f"removed: {', '.join(removed) if removed else 'nothing'}")


@task(name="netns-status")
@one_line_errors
def netns_status(c):
    """Show copylab's namespaces, addresses and link state."""
    from copylab.testbeds import netns

    entries = netns.status()
    for entry in entries:
        print("  ".join(f"{key}={value}" for key, value in entry.items()))
    if not entries:
        print("no copylab namespaces")


def _option_value(setting: Any, given: Any) -> Any:
    """A run-sweep option's value as the setting takes it; None when not given."""
    if setting.kind == "bool":
        return None if given == setting.default else bool(given)
    if given is None:
        return None
    convert = {"ints": int, "sizes": _size, "strs": str}.get(setting.kind)
    if convert is not None:
        return _list(given, convert)
    if setting.kind in ("int", "float"):
        return _number(setting.option, given, int if setting.kind == "int" else float)
    return str(given)


def _run_sweep(c, name="sweep", profile="quick", sweep_file=None, resume=False, analyze=True, **options):
    """Run every configuration of a sweep in namespaces (root) or between two hosts over SSH, writing
    data/NAME/trials.csv."""
    from copylab import experiments
    from copylab.declarations import settings
    from copylab.declarations.config import make_config
    from copylab.measure import sweep
    from copylab.programs.build import build as run_build

    overrides = {s.name: _option_value(s, options.get(s.parameter)) for s in settings.SETTINGS if s.option}
    # An experiment's own word for its implementations (--models) names them and implies the experiment.
    for experiment in experiments.EXPERIMENTS.values():
        aliased = options.get(experiment.noun) if experiment.noun != "implementations" else None
        if aliased is None:
            continue
        if overrides["implementations"] is not None:
            raise CopylabError(f"give --{experiment.noun} or --implementations, not both")
        if overrides["experiment"] not in (None, experiment.name):
            raise CopylabError(
                f"--{experiment.noun}: only the {experiment.name} experiment has {experiment.noun} "
                f"(add --experiment {experiment.name})"
            )
        overrides.update(implementations=_list(aliased), experiment=experiment.name)
    config = make_config(name, profile, Path(sweep_file) if sweep_file else None, **overrides)
    if not config.server_host:  # two hosts build on each host
        run_build(config.sanitize)
    result = sweep.run(config, resume=resume, progress=sys.stderr.isatty())
    print(result.summary())
    if analyze and (result.ok or result.skipped):  # skipped: ok rows of an earlier, interrupted run
        _analyze(result.directory)
    if result.failed:
        raise Exit(f"copylab: {result.failed} of {result.ran} trials failed (see the error column)", code=1)


def _run_sweep_task() -> Any:
    """run-sweep, its options made from copylab.declarations.settings (one per setting) and the experiments' own words."""
    from copylab import experiments
    from copylab.declarations import settings

    own = [
        Parameter("name", Parameter.KEYWORD_ONLY, default="sweep"),
        Parameter("profile", Parameter.KEYWORD_ONLY, default="quick"),
        Parameter("sweep_file", Parameter.KEYWORD_ONLY, default=None),
        Parameter("resume", Parameter.KEYWORD_ONLY, default=False),
        Parameter("analyze", Parameter.KEYWORD_ONLY, default=True),
    ]
    helps = {
        "name": "sweep name: data goes to data/NAME",
        "profile": "quick or full (README: Sweeps lists each experiment's profiles)",
        "sweep_file": "TOML file with any of the settings below, by name (README: Sweeps)",
        "resume": "run exactly the trials of data/NAME not yet recorded as ok",
        "analyze": "analyse the sweep when it ends (default yes)",
    }
    declared = [s for s in settings.SETTINGS if s.option]
    own += [
        Parameter(s.parameter, Parameter.KEYWORD_ONLY, default=s.default if s.kind == "bool" else None)
        for s in declared
    ]
    helps.update({s.parameter: s.help for s in declared})
    for experiment in experiments.EXPERIMENTS.values():
        if experiment.noun != "implementations":
            own.append(Parameter(experiment.noun, Parameter.KEYWORD_ONLY, default=None))
            helps[experiment.noun] = f"the {experiment.name} experiment's {experiment.noun} (implies it)"
    body = functools.wraps(_run_sweep)(lambda c, **options: _run_sweep(c, **options))
    body.__signature__ = Signature([Parameter("c", Parameter.POSITIONAL_OR_KEYWORD), *own])
    # Long options only: short ones would be handed out by the order of the table, and move when it grows.
    return task(name="run-sweep", help=helps, auto_shortflags=False)(one_line_errors(body))


run_sweep = _run_sweep_task()


def _analyze(data: Path) -> None:
    from copylab.analysis.analyze_sweep import run_analysis_notebook
    from copylab.record.store import SweepStore

    store = SweepStore(data)
    notebook = run_analysis_notebook(store)
    print(f"analysis: {store.directory}/crossovers.csv, {store.figures_dir}/, {notebook}")


@task(help={"data": "sweep directory, e.g. data/reference"})
@one_line_errors
def analyze(c, data=str(REFERENCE_DATA)):
    """Run the analysis notebook on a sweep (statistics, crossovers, figures)."""
    from copylab.record.store import SweepStore

    _say_if_modified(SweepStore(data))
    _analyze(Path(data))


@task(
    help={
        "data": "render from these existing sweeps (comma list: a copies sweep, optionally a servers sweep and "
        "more) instead of running the quick sweeps (no root needed)",
        "title": "report title",
        "author": "author line",
    }
)
@one_line_errors
def report(c, data=None, title=None, author=None):
    """The main job: build, run the quick sweeps of both experiments, analyse them and write report/report.pdf."""
    from copylab.record.store import SweepStore
    from copylab.report.render import render_report

    if data is None:
        stores = _quick_sweeps()
    else:
        stores = [SweepStore(directory) for directory in _list(data)]
        for store in stores:
            if not store.trials_path.is_file():
                raise CopylabError(f"{store.directory}: not a sweep directory (no trials.csv)")
    for store in stores:
        _say_if_modified(store)
    stale = [store for store in stores if store.missing_tables()]
    for store in stale:
        print(f"analysis first: {store.directory} has no current {', '.join(store.missing_tables())}")
    # The analyses are independent notebooks: side by side, each in a process of its own (a Jupyter client is not
    # safe across threads), they take about the time of one.
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_analyze, [store.directory for store in stale]))
    kwargs = {k: v for k, v in (("title", title), ("author", author)) if v is not None}
    pdf = render_report(stores, REPORT / "report.pdf", **kwargs)
    print(f"report: {pdf}")


@task(
    help={
        "a": "the sweep directory compared against (A)",
        "b": "the sweep directory compared (B), of the same experiment",
        "out": "where comparison.csv, the figures and comparison.pdf go (default: report/comparisons/A-vs-B)",
    }
)
@one_line_errors
def compare(c, a, b, out=None):
    """What changed from sweep A to sweep B: B/A per configuration and main metric with verdicts, crossovers,
    manifest differences; prints the paths it wrote, one per line."""
    from copylab.analysis.two_runs import compare_runs
    from copylab.record.store import SweepStore
    from copylab.report.comparison import write_comparison

    stores = [SweepStore(directory) for directory in (a, b)]
    for store in stores:
        if not store.trials_path.is_file() or not store.manifest_path.is_file():
            raise CopylabError(f"{store.directory}: not a sweep directory (no trials.csv and manifest.json)")
    result = compare_runs(*stores)
    for warning in result.warnings():
        warnings.warn(ModifiedData(warning), stacklevel=1)
    directory = Path(out) if out else REPORT / "comparisons" / f"{stores[0].name}-vs-{stores[1].name}"
    for path in write_comparison(result, directory):
        print(path)


def _quick_sweeps():
    """Runs each experiment's quick sweep under one timestamped name (the main experiment's without its name);
    returns their stores."""
    from copylab import experiments
    from copylab.declarations.config import make_config
    from copylab.measure import sweep
    from copylab.measure.provenance import now_iso
    from copylab.programs.build import build as run_build
    from copylab.record.store import SweepStore

    run_build()
    stamp = now_iso().replace(":", "").replace("-", "").replace("+0000", "")
    stores = []
    for experiment in experiments.EXPERIMENTS.values():
        name = f"quick-{stamp}" if experiment.main else f"quick-{experiment.name}-{stamp}"
        result = sweep.run(make_config(name, "quick", experiment=experiment.name), progress=sys.stderr.isatty())
        print(result.summary())
        if not result.ok:
            raise CopylabError(f"no trial of the {experiment.name} sweep succeeded; nothing to report")
        stores.append(SweepStore(result.directory))
    return stores


@task(
    help={
        "k": "only tests matching this pytest expression",
        "x": "stop at the first failure",
        "workers": "tests run this many at a time (default: 2, or 1 on a single CPU)",
    }
)
@one_line_errors
def test(c, k=None, x=False, workers=None):
    """Run the whole test suite (needs root for the namespace tests); pytest's own options follow `--`.

    The tests run two at a time, a module per worker; then those marked serial, which measure this machine's speed,
    run alone."""
    workers = _number("workers", workers, int) if workers is not None else min(2, os.cpu_count() or 1)
    if workers < 1:
        raise CopylabError(f"--workers: {workers} is out of range (1 to {os.cpu_count()})")
    passed_on = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    # the slowest tests named at the end: the suite has a time budget (README)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rs",
        "--durations=12",
        *(["-k", k] if k else []),
        *(["-x"] if x else []),
    ]
    parallel = ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []
    shared = subprocess.call([*command, *parallel, "-m", "not serial", *passed_on], cwd=ROOT)
    if shared not in (0, NOTHING_COLLECTED) and x:
        raise Exit(code=shared)
    alone = subprocess.call([*command, "-m", "serial", *passed_on], cwd=ROOT)
    # a part with nothing to run (say -k picks tests of one part only) is no failure, both parts empty are
    codes = {shared, alone} - {NOTHING_COLLECTED} or {NOTHING_COLLECTED}
    raise Exit(code=max(codes))


@task(help={"port": "port on localhost", "data": "default sweep shown by the explorer"})
@one_line_errors
def lab(c, port=8888, data=str(REFERENCE_DATA)):
    """Open the explorer notebook in JupyterLab on localhost; prints the URL that opens it."""
    from copylab.explore.explorer import ENV_VAR

    port = _number("port", port, int)
    if not 1 <= port <= 65535:
        raise CopylabError(f"--port: {port} is not a port (1 to 65535)")
    # A token of our own, so the printed URL can open the explorer notebook itself, not the launcher.
    token = secrets.token_hex(24)
    notebook = (NOTEBOOKS / "30_explore.ipynb").relative_to(ROOT).as_posix()
    env = dict(os.environ, **{ENV_VAR: str(Path(data).resolve())})
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={ROOT}",
        f"--IdentityProvider.token={token}",
        "--allow-root",
    ]
    print(f"copylab explorer: http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}", flush=True)
    raise Exit(code=subprocess.call(command, cwd=ROOT, env=env))


@task(help={"data": "also store the result in this sweep's manifest.json"})
@one_line_errors
def calibrate(c, data=None):
    """Measure single-core memcpy bandwidth (the copy-bound ceiling), the copy cost per byte by cache level and
    what the copy paths found."""
    import dataclasses

    from copylab.programs.build import build as run_build
    from copylab.programs.calibration_run import calibration
    from copylab.record.calibration import copy_cost_table
    from copylab.record.store import SweepStore

    store = SweepStore(data) if data else None
    record = store.read_manifest() if store else None  # a bad --data fails before anything is measured
    run_build()
    result = calibration()
    print(f"memcpy: {result.memcpy_gbps:.1f} Gbit/s on CPU {result.cpu} ({result.buffer_mib} MiB buffer)")
    caches = ", ".join(f"{level.name} {level.size_bytes >> 10} KiB" for level in result.caches) or "not in sysfs"
    print(
        f"caches of CPU 0: {caches}\ncopy cost per byte (memcpy as linked, median over rounds, hot buffers, "
        f"at the cheaper placement):\n{copy_cost_table(result)}"
    )
    if store and record:
        store.write_manifest(dataclasses.replace(record, calibration=result))
        print(f"stored in {store.manifest_path}")


@task(
    help={
        "pairs": "interleaved copylab/iperf3 pairs per comparison",
        "duration": "seconds per trial",
        "rows": "rows of the synthetic trials.csv the analysis is timed on",
        "smoke": "run every part as briefly as possible (what CI runs)",
    }
)
@one_line_errors
def bench(c, pairs=5, duration=2.0, rows=100000, smoke=False):
    """Compare with iperf3 on the same link, time the harness and analysis, show the copy limit (root)."""
    from copylab.cli.bench import run_bench, table
    from copylab.measure.provenance import host, now_iso
    from copylab.programs.build import build as run_build

    run_build()
    figures = run_bench(int(pairs), float(duration), int(rows), smoke)
    machine = host()
    print(f"copylab bench, {now_iso()}, {machine.cpu_model}, {machine.cores} cores, kernel {machine.kernel}")
    print(table(figures))
    if any(figure.passed is False for figure in figures):
        raise Exit(code=1)


@task
@one_line_errors
def clean(c):
    """Remove builds and generated outputs (sweeps under data/ other than reference stay)."""
    import shutil

    for path in (ROOT / "build", ROOT / "figures", REPORT):
        for child in path.glob("*") if path != ROOT / "build" else [path]:
            if child.name != ".gitkeep":
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    print(f"cleaned builds and outputs; sweeps in {DATA} kept")
