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
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from invoke import Exit, task

from copylab.errors import CopylabError
from copylab.paths import DATA, NOTEBOOKS, REFERENCE_DATA, REPORT, ROOT


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
            return function(*args, **kwargs)
        except CopylabError as error:
            raise Exit(f"copylab: error: {error}", code=2) from None
        except KeyboardInterrupt:
            raise Exit("copylab: interrupted; everything measured so far is saved", code=130) from None
        finally:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_interrupt)

    return wrapper


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


@task(help={"sanitize": "address, undefined or thread: an instrumented build in build/sanitize-NAME"})
@one_line_errors
def build(c, sanitize=None):
    """Compile the C programs (gcc -O2 -Wall -Wextra -Werror) into build/bin."""
    from copylab.build import build as run_build

    out = run_build(sanitize)
    print(f"built {out / 'bin'}")


def _pair(server: str, client: str, mtu: int, optmem_max: int):
    from copylab.netns import NamespacePair

    return NamespacePair(server, client, mtu=mtu, optmem_max=optmem_max)


@task(name="netns-up")
@one_line_errors
def netns_up(c, server="copylab_srv", client="copylab_cli", mtu=1500, optmem_max=131072):
    """Create the two namespaces and their veth link (root)."""
    from copylab import netns

    netns.up(_pair(server, client, int(mtu), int(optmem_max)))
    for entry in netns.status():
        print(entry)


@task(name="netns-down")
@one_line_errors
def netns_down(c):
    """Remove every namespace copylab created (root); others are never touched."""
    from copylab import netns

    netns.require_root("netns-down")
    removed = netns.down()
    print(f"removed: {', '.join(removed) if removed else 'nothing'}")


@task(name="netns-status")
@one_line_errors
def netns_status(c):
    """Show copylab's namespaces, addresses and link state."""
    from copylab import netns

    entries = netns.status()
    for entry in entries:
        print("  ".join(f"{key}={value}" for key, value in entry.items()))
    if not entries:
        print("no copylab namespaces")


@task(
    name="run-sweep",
    help={
        "name": "sweep name: data goes to data/NAME",
        "experiment": "copies (how bytes leave user space, the default) or servers (how a server waits for "
        "connections)",
        "profile": "quick or full (README: Sweeps lists each experiment's profiles)",
        "sweep_file": "TOML file with any of the settings below",
        "implementations": "comma list of the implementations (copylab/implementations.py)",
        "models": "servers: comma list of iterative,thread,fork,select,poll,epoll (the experiment's implementations)",
        "connections": "servers: concurrent connections the load client keeps busy, e.g. 1,10,100,1000",
        "workloads": "comma list of stream,rr",
        "sizes": "message sizes, e.g. 64,1K,64K",
        "rr_sizes": "message sizes of the rr (latency) workload",
        "threads": "thread counts, e.g. 1,2,4,8",
        "pinning": "comma list of none,same_cpu,split_cpu",
        "receive": "comma list of copy,truncate,mmap: how the client takes the bytes in",
        "receive_for": "implementations that get the receive modes other than copy (default: all)",
        "resume": "run exactly the trials of data/NAME not yet recorded as ok",
        "analyze": "analyse the sweep when it ends (default yes)",
        "namespaces": "names of the server and client namespaces, e.g. copylab_srv,copylab_cli",
        "target_ci": "adaptive repetition: add trials until the 95%% interval half-width is within this "
        "fraction of the mean (e.g. 0.05), at least 3 trials",
        "max_trials": "adaptive repetition: at most this many trials per configuration",
        "server_host": "two hosts: run the servers on USER@HOST[:PORT] over SSH (README: Two machines)",
        "client_host": "two hosts: run the clients on USER@HOST[:PORT] over SSH",
        "server_address": "two hosts: the IPv4 address the client reaches the server at on the data path",
        "ssh_config": "two hosts: an OpenSSH client configuration file (keys, ports, known hosts)",
        "tune_remote": "two hosts: set --mtu and --optmem-max on both hosts for the sweep, restored after",
        "kernel_copies": "count the bytes the kernel copies in each window with bpftrace (default yes)",
        "align_fields": "allocate each of the senders' 8 fields on a page boundary (recorded in the rows)",
        "design": "blocked (default: each block runs every implementation of a point back to back, comparisons "
        "pair them) or randomized (the whole grid in one random order, unpaired)",
        "budget": "a blocked sweep's time budget in seconds: after the first pass, blocks go to the comparisons that "
        "decide the experiment's answers and are still undecided, then to the other implementations",
    },
)
@one_line_errors
def run_sweep(
    c,
    name="sweep",
    experiment=None,
    profile="quick",
    sweep_file=None,
    implementations=None,
    models=None,
    connections=None,
    workloads=None,
    sizes=None,
    rr_sizes=None,
    threads=None,
    trials=None,
    duration=None,
    warmup=None,
    pinning=None,
    receive=None,
    receive_for=None,
    seed=None,
    verify=False,
    mtu=None,
    optmem_max=None,
    namespaces=None,
    target_ci=None,
    max_trials=None,
    resume=False,
    analyze=True,
    server_host=None,
    client_host=None,
    server_address=None,
    ssh_config=None,
    tune_remote=False,
    kernel_copies=True,
    align_fields=False,
    design=None,
    budget=None,
):
    """Run every configuration of a sweep in namespaces (root) or between two hosts over SSH, writing
    data/NAME/trials.csv."""
    from copylab import sweep
    from copylab.build import build as run_build
    from copylab.config import make_config

    if models is not None and implementations is not None:
        raise CopylabError("give --models or --implementations, not both (models are the servers' implementations)")
    if models is not None and (experiment or "servers") != "servers":
        raise CopylabError("--models: only the servers experiment has models (add --experiment servers)")
    config = make_config(
        name,
        profile,
        Path(sweep_file) if sweep_file else None,
        experiment="servers" if models is not None and experiment is None else experiment,
        implementations=_list(implementations if models is None else models),
        connections=_list(connections, int),
        workloads=_list(workloads),
        sizes=_list(sizes, _size),
        rr_sizes=_list(rr_sizes, _size),
        threads=_list(threads, int),
        trials=_number("trials", trials, int),
        duration_s=_number("duration", duration, float),
        warmup_s=_number("warmup", warmup, float),
        pinning=_list(pinning),
        receive=_list(receive),
        receive_for=_list(receive_for),
        seed=_number("seed", seed, int),
        verify=verify or None,
        mtu=_number("mtu", mtu, int),
        optmem_max=_number("optmem-max", optmem_max, int),
        namespaces=_list(namespaces),
        target_ci=_number("target-ci", target_ci, float),
        max_trials=_number("max-trials", max_trials, int),
        server_host=server_host,
        client_host=client_host,
        server_address=server_address,
        ssh_config=ssh_config,
        tune_remote=tune_remote or None,
        kernel_copies=None if kernel_copies else False,
        align_fields=align_fields or None,
        design=design,
        budget_s=_number("budget", budget, float),
    )
    if not config.server_host:  # two hosts build on each host
        run_build(config.sanitize)
    result = sweep.run(config, resume=resume, progress=sys.stderr.isatty())
    print(result.summary())
    if analyze and (result.ok or result.skipped):  # skipped: ok rows of an earlier, interrupted run
        _analyze(result.directory)
    if result.failed:
        raise Exit(f"copylab: {result.failed} of {result.ran} trials failed (see the error column)", code=1)


def _analyze(data: Path) -> None:
    from copylab.analysis import run_analysis_notebook
    from copylab.store import SweepStore

    store = SweepStore(data)
    notebook = run_analysis_notebook(store)
    print(f"analysis: {store.directory}/crossovers.csv, {store.figures_dir}/, {notebook}")


@task(help={"data": "sweep directory, e.g. data/reference"})
@one_line_errors
def analyze(c, data=str(REFERENCE_DATA)):
    """Run the analysis notebook on a sweep (statistics, crossovers, figures)."""
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
    from copylab.report import render_report
    from copylab.store import SweepStore

    if data is None:
        stores = _quick_sweeps()
    else:
        stores = [SweepStore(directory) for directory in _list(data)]
        for store in stores:
            if not store.trials_path.is_file():
                raise CopylabError(f"{store.directory}: not a sweep directory (no trials.csv)")
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


def _quick_sweeps():
    """Runs each experiment's quick sweep under one timestamped name (copies first); returns their stores."""
    from copylab import sweep
    from copylab.build import build as run_build
    from copylab.config import PROFILES, make_config
    from copylab.manifest import now_iso
    from copylab.store import SweepStore

    run_build()
    stamp = now_iso().replace(":", "").replace("-", "").replace("+0000", "")
    stores = []
    for experiment in PROFILES:
        name = f"quick-{stamp}" if experiment == "copies" else f"quick-{experiment}-{stamp}"
        result = sweep.run(make_config(name, "quick", experiment=experiment), progress=sys.stderr.isatty())
        print(result.summary())
        if not result.ok:
            raise CopylabError(f"no trial of the {experiment} sweep succeeded; nothing to report")
        stores.append(SweepStore(result.directory))
    return stores


@task(help={"k": "only tests matching this pytest expression", "x": "stop at the first failure"})
def test(c, k=None, x=False):
    """Run the whole test suite (needs root for the namespace tests)."""
    command = [sys.executable, "-m", "pytest", "-q", "-rs"]
    if k:
        command += ["-k", k]
    if x:
        command.append("-x")
    raise Exit(code=subprocess.call(command, cwd=ROOT))


@task(help={"port": "port on localhost", "data": "default sweep shown by the explorer"})
@one_line_errors
def lab(c, port=8888, data=str(REFERENCE_DATA)):
    """Open the explorer notebook in JupyterLab on localhost; prints the URL that opens it."""
    from copylab.explorer import ENV_VAR

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

    from copylab.build import build as run_build
    from copylab.calibrate import calibration
    from copylab.calibration import copy_cost_table
    from copylab.store import SweepStore

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
    from copylab.bench import run_bench, table
    from copylab.build import build as run_build
    from copylab.manifest import host, now_iso

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
