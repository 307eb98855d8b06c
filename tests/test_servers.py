"""The servers experiment: the model servers and the load client, their sweep, its analysis along connections,
its report section and explorer view, and the bad input it refuses."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.declarations import implementations
from copylab.declarations.config import check_descriptor_limit, make_config
from copylab.errors import CopylabError
from copylab.explore.explorer import Explorer
from copylab.formatting import fmt_num
from copylab.paths import ROOT
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.experiments.servers import answers as server_answers
from copylab.report.experiments.servers import report as server_report
from copylab.report.experiments.servers import waiting
from copylab.report.results import load_results, select
from copylab.testbeds.netns import exec_prefix
from copylab.vocabulary.limits import SATURATED
from tests.conftest import needs_root, run_in
from tests.synthetic import SERVER_MODELS, make_server_trials, write_sweep

MODELS = implementations.names("servers")
PORT = 5402


# ------------------------------------------------------------------ the programs


def start_model(
    bin_dir: Path,
    pair,
    model: str,
    connections: int,
    size: int = 64,
    duration: float = 0.4,
    threads: int = 1,
    client_options: tuple[str, ...] = (),
) -> tuple[subprocess.CompletedProcess[str], int, str, str]:
    """One session between MODEL_server and load_client: the client's result, the server's exit, stdout, stderr."""
    server = subprocess.Popen(
        [
            *exec_prefix(pair.server),
            str(bin_dir / f"{model}_server"),
            *("--bind", pair.server_address, "--port", str(PORT), "--size", str(size), "--timeout", "20"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        client = run_in(
            pair.client,
            [
                str(bin_dir / "load_client"),
                *("--connect", pair.server_address, "--port", str(PORT), "--size", str(size)),
                *("--connections", str(connections), "--threads", str(threads)),
                *("--duration", str(duration), "--warmup", "0.2"),
                *client_options,
            ],
        )
        server_out, server_err = server.communicate(timeout=20)
    finally:
        server.kill()
        server.wait()
    return client, server.returncode, server_out, server_err


def run_model(bin_dir: Path, pair, model: str, connections: int, **options) -> tuple[dict, dict, str]:
    """A session that must succeed: both results and both sides' stderr."""
    client, server_status, server_out, server_err = start_model(bin_dir, pair, model, connections, **options)
    assert client.returncode == 0, f"client: {client.stderr} server (exit {server_status}): {server_err}"
    assert server_status == 0, server_err
    return json.loads(server_out), json.loads(client.stdout), client.stderr + server_err


@needs_root
@pytest.mark.parametrize("model", MODELS)
def test_every_model_answers_every_connection_it_holds(bin_dir, pair, model):
    connections = 40
    server, client, _ = run_model(bin_dir, pair, model, connections)
    assert server["role"] == "server" and server["model"] == model and server["connections"] == connections
    assert client["connections"] == connections and client["requests"] > 0
    assert client["requests_per_s"] == pytest.approx(client["requests"] / client["measured_s"], rel=1e-6)
    assert client["bytes"] == client["requests"] * 64
    assert 0 < client["latency_p50_us"] <= client["latency_p99_us"] <= client["latency_max_us"]
    assert server["cpu_user_s"] + server["cpu_sys_s"] > 0
    if implementations.get(model).max_connections is None and model != "iterative":
        assert client["connections_served"] == connections and client["fairness"] > 0.5
    if model == "iterative":  # one connection at a time: the client keeps the first busy, the rest wait
        assert client["connections_served"] == 1
        assert client["fairness"] == pytest.approx(1 / connections)


@needs_root
@pytest.mark.parametrize("model", ["thread", "fork", "epoll"])
def test_a_thousand_connections_are_all_served(bin_dir, pair, model):
    """The window opens once the server holds every connection: none is still waiting to be accepted."""
    server, client, _ = run_model(bin_dir, pair, model, 1000, duration=0.5)
    assert client["connections_served"] == 1000
    assert server["connections"] == 1000


@needs_root
@pytest.mark.parametrize("model", ["select", "epoll", "uring"])
def test_idle_connections_are_held_silent_and_every_response_is_verified(bin_dir, pair, model):
    """The server holds busy and idle connections alike; only the busy ones are served, every byte checked."""
    options = ("--idle-connections", "200", "--verify")
    server, client, _ = run_model(bin_dir, pair, model, 10, size=1000, client_options=options)
    assert server["connections"] == 210 and client["connections"] == 10 and client["idle_connections"] == 200
    assert client["connections_served"] == 10 and client["requests"] > 0


IO_URING_SETUP = 425  # the system call's number, the same on every architecture (kernel 5.1 on)


def _io_uring_refused() -> str | None:
    """Why this kernel refuses io_uring, asked directly (io_uring_setup of a one-entry ring), or None when it gives
    one: what the uring server's probe must agree with."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(IO_URING_SETUP, 1, params)
    if fd < 0:
        return os.strerror(ctypes.get_errno())
    os.close(fd)
    return None


def test_the_uring_probe_says_what_this_kernel_gives(bin_dir):
    """A kernel that sets up io_uring rings gets a server that runs; one that refuses them, a one-line reason."""
    result = subprocess.run([str(bin_dir / "uring_server"), "--probe"], capture_output=True, text=True, timeout=10)
    refused = _io_uring_refused()
    if refused is None:
        assert result.returncode == 0, f"this kernel sets up io_uring rings, yet the probe says: {result.stderr}"
    else:
        assert result.returncode != 0, f"this kernel refuses io_uring ({refused}), yet the probe passes"
        assert "unavailable here" in result.stderr and result.stderr.count("\n") == 1, result.stderr


@needs_root
def test_forked_servers_count_their_childrens_cpu(bin_dir, pair):
    """A process per connection: the children's CPU time is the server's.  Without it the server would have spent
    next to nothing (its parent only waits), while it does a receive and a send per request like the client: a
    share of the client's CPU, whatever else runs on the host."""
    fork, client, _ = run_model(bin_dir, pair, "fork", 20)
    server_cpu, client_cpu = (side["cpu_user_s"] + side["cpu_sys_s"] for side in (fork, client))
    assert server_cpu > 0.3 * client_cpu, (server_cpu, client_cpu)
    assert fork["ctx_voluntary"] >= client["requests"] * 0.5  # a wake-up per request, in the children


@needs_root
@pytest.mark.serial  # compares the speeds of two servers: another test sharing the CPUs would skew them
def test_the_load_client_leaves_a_costly_server_the_bottleneck(bin_dir, pair):
    """A process per connection costs the server more per request than the load client pays, so at 100 connections
    the server's CPU is full while the client's has room: requests/s measure the server there."""
    server, client, _ = run_model(bin_dir, pair, "fork", 100, duration=0.6)
    window = client["measured_s"]
    server_busy = (server["cpu_user_s"] + server["cpu_sys_s"]) / window
    client_busy = (client["cpu_user_s"] + client["cpu_sys_s"]) / window
    # the server is the busier side, and the client has room as the report judges a side (limits.SATURATED)
    assert server_busy > client_busy and client_busy < SATURATED, (server_busy, client_busy)


@needs_root
def test_select_refuses_more_than_its_descriptor_sets_hold(bin_dir, pair):
    limit = implementations.get("select").max_connections
    client, server_status, _, server_err = start_model(bin_dir, pair, "select", limit + 1, duration=0.2)
    assert server_status == 2
    assert server_err.count("\n") == 1 and f"holds at most {limit} connections" in server_err
    assert client.returncode != 0 and client.stderr.count("\n") == 1


LOAD = ("--connect", "127.0.0.1", "--port", "5999", "--size", "64")


@pytest.mark.parametrize(
    "args,message",
    [
        ((*LOAD, "--connections", "0"), "--connections: 0 is out of range"),
        ((*LOAD, "--connections", "5000"), "--connections: 5000 is out of range"),
        ((*LOAD, "--connections", "many"), "--connections: 'many' is not"),
        (LOAD, "--connections C is required"),
        ((*LOAD, "--connections", "2", "--threads", "3"), "leaves threads with nothing to do"),
        ((*LOAD, "--connections", "100", "--idle-connections", "4000"), "are more than 4096"),
    ],
)
def test_load_client_bad_input(bin_dir, args, message):
    result = subprocess.run([str(bin_dir / "load_client"), *args], capture_output=True, text=True, timeout=5)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


@needs_root
@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_sanitized_models_run_clean(pair, sanitizer):
    """ASan+UBSan and TSan builds of every model and the load client: no report, every connection served."""
    from copylab.programs.build import build

    sanitized = build(sanitizer) / "bin"
    for model in MODELS:
        _, client, stderr = run_model(sanitized, pair, model, 12, threads=3, duration=0.3)
        assert "Sanitizer" not in stderr and "runtime error" not in stderr, stderr
        assert client["connections_served"] == (1 if model == "iterative" else 12)


# ------------------------------------------------------------------ the sweep


def _inv(*args: str, timeout: float = 600, tag: str = "") -> subprocess.CompletedProcess[str]:
    """invoke ARGS; TAG, if given, marks the environment every process it starts inherits."""
    return subprocess.run(
        [sys.executable, "-m", "invoke", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, TAG_VARIABLE: tag} if tag else None,
    )


TAG_VARIABLE = "COPYLAB_TEST_TAG"


def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment carries TAG: those a tagged command started, and no other test's."""
    marker = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:
            continue  # ended meanwhile, or a kernel thread
    return found


def sweep_namespaces(name: str) -> tuple[str, str]:
    """The namespaces of the test sweep NAME: no other test's sweep uses them."""
    tag = zlib.crc32(name.encode()) % 100000
    return f"clsw{tag}_s", f"clsw{tag}_c"


@contextmanager
def servers_sweep_run(name: str, *options: str) -> Iterator[tuple[subprocess.CompletedProcess[str], Path]]:
    """`./inv run-sweep` of a servers sweep NAME with OPTIONS, unanalysed, in namespaces of its own (sweep_namespaces)
    and its processes tagged with NAME: the result and the sweep's directory, removed afterwards."""
    options = (*options, "--namespaces", ",".join(sweep_namespaces(name)), "--no-analyze")
    result = _inv("run-sweep", "--name", name, "--experiment", "servers", *options, tag=name)
    directory = ROOT / "data" / name
    try:
        yield result, directory
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)


@needs_root
def test_a_servers_sweep_runs_every_model_and_leaves_nothing(tmp_path):
    name = f"test-servers-{os.getpid()}"
    options = ("--models", ",".join(MODELS), "--connections", "1,8", "--trials", "1", "--duration", "0.2")
    with servers_sweep_run(name, *options, "--warmup", "0.1") as (result, directory):
        assert result.returncode == 0, result.stderr[-2000:]
        trials, manifest = SweepStore(directory).load()
        assert manifest.parameters.experiment == "servers" and manifest.complete
        assert len(trials) == len(MODELS) * 2 and (trials["status"] == "ok").all()
        assert (trials["experiment"] == "servers").all() and (trials["model"] == trials["implementation"]).all()
        assert set(trials["connections"]) == {1, 8} and (trials["pinning"] == "split_cpu").all()
        assert trials["requests_per_s"].gt(0).all()
        # Jain's index over n connections of which k completed a request lies within [1/n, k/n] (Cauchy-Schwarz
        # over the k non-zero counts): with one connection it is 1; with 8 it must agree with the count served.
        n, served = trials["connections"], trials["connections_served"]
        assert ((1 / n - 1e-9 <= trials["fairness"]) & (trials["fairness"] <= served / n + 1e-9)).all(), trials[
            ["model", "connections", "connections_served", "fairness"]
        ]
        assert (trials.loc[n == 1, "fairness"] == 1).all()
        assert trials["trial_id"].str.contains("-8-split_cpu-copy-r1").sum() == len(MODELS)
        # the host's floor, measured once before the trials, at both placements of the two ends
        assert set(manifest.host_floor) == {"same_cpu", "split_cpu"} and min(manifest.host_floor.values()) > 0
        leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert not set(sweep_namespaces(name)) & set(leftovers.split())
        assert tagged_processes(name) == []


@pytest.mark.parametrize(
    "args,message",
    [
        (("--connections", "0"), "connections: 0 is out of range (1 to 4096)"),
        (("--models", "threadpool"), "models: unknown 'threadpool'"),
        (("--models", "select", "--connections", "2000"), "a select server holds at most 1008 connections"),
        (("--experiment", "copies", "--models", "epoll"), "--models: only the servers experiment has models"),
        (("--models", "epoll", "--implementations", "epoll"), "give --models or --implementations, not both"),
        (("--experiment", "sideways"), "experiment: unknown 'sideways'"),
        (("--experiment", "servers", "--workloads", "stream"), "runs request/response (rr)"),
        (("--experiment", "copies", "--connections", "4"), "the copies experiment opens one connection per thread"),
        (("--experiment", "copies", "--idle-connections", "0,10"), "none is idle"),
        (("--models", "select", "--connections", "10", "--idle-connections", "0,1000"), "not 10 busy + 1000 idle"),
        (("--connections", "100", "--idle-connections", "4000"), "100 busy + 4000 idle connections are more than"),
        (("--idle-connections", "-1"), "idle-connections: -1 is out of range (0 to 4096)"),
        (("--load", "open"), "rates: an open load needs the rates it offers"),
        (("--rates", "1000"), "rates: only an open load offers a rate (add --load open)"),
        (("--load", "open", "--rates", "0"), "rates: 0 is out of range (1 to 1000000)"),
        (("--load", "sideways"), "load: unknown 'sideways' (choose from closed, open)"),
        (("--experiment", "copies", "--load", "open", "--rates", "10"), "it offers no rate"),
    ],
)
def test_bad_servers_input_is_one_line_before_anything_is_created(args, message):
    name = f"bad-servers-{os.getpid()}"
    result = _inv(
        "run-sweep", "--name", name, *(args if "--experiment" in args else ("--experiment", "servers", *args))
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (ROOT / "data" / name).exists()


def test_connections_beyond_the_descriptor_limit_are_refused_unprivileged(monkeypatch):
    config = make_config("limits", experiment="servers", implementations=["epoll"], connections=[4000])
    monkeypatch.setattr("resource.getrlimit", lambda _: (1024, 1024))
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(CopylabError, match="4000 connections need 4064 descriptors per process and the hard limit"):
        check_descriptor_limit(config)
    monkeypatch.setattr("os.geteuid", lambda: 0)  # root raises the hard limit itself
    check_descriptor_limit(config)


# ------------------------------------------------------------------ analysis, report and explorer


@pytest.fixture(scope="module")
def servers_sweep(tmp_path_factory) -> Path:
    directory = write_sweep(tmp_path_factory.mktemp("servers") / "data" / "synthetic-servers", make_server_trials())
    analyze(SweepStore(directory, figures_root=directory.parent.parent / "figures"), plugins.draw, n_resamples=400)
    return directory


def test_crossovers_run_along_connections_and_find_the_known_one(servers_sweep):
    crossovers = pd.read_csv(servers_sweep / "crossovers.csv")
    assert (crossovers["axis"] == "connections").all() and crossovers["connections"].isna().all()
    found = crossovers[(crossovers["metric"] == "requests_per_s") & (crossovers["baseline"] == "thread")]
    multiplexing = found[found["challenger"].isin(["select", "poll", "epoll"])].set_index("challenger")
    assert (multiplexing["status"] == "crossover").all()
    for _, row in multiplexing.iterrows():  # synthetic truth: 30 connections
        assert row["ci_low"] <= 30 <= row["ci_high"] and 10 <= row["crossover_at"] <= 100
    statuses = found.set_index("challenger")["status"]
    assert statuses["fork"] == "challenger_never_better" and statuses["iterative"] == "challenger_never_better"


def test_comparisons_are_holm_corrected_along_each_connections_curve(servers_sweep):
    comparisons = pd.read_csv(servers_sweep / "comparisons.csv")
    curve = comparisons[(comparisons["challenger"] == "epoll") & (comparisons["metric"] == "requests_per_s")]
    assert sorted(curve["connections"]) == [1, 10, 100, 1000]
    p = np.sort(curve["p_value"].to_numpy())
    assert curve["p_holm"].min() == pytest.approx(min(1.0, p[0] * len(p)))


def test_the_section_states_crossovers_scaling_limits_and_fairness_from_the_tables(servers_sweep):
    results = load_results(SweepStore(servers_sweep, figures_root=servers_sweep.parent.parent / "figures"))
    crossovers = results.crossovers
    answers = dict(server_report.answers(results))
    crossing = answers[server_answers.QUESTIONS[0]]
    epoll = crossovers[(crossovers["challenger"] == "epoll") & (crossovers["metric"] == "requests_per_s")].iloc[0]
    assert f"from about {fmt_num(epoll['crossover_at'])} connections" in crossing
    assert "| `fork` | never better |" in crossing
    scaling = answers[server_answers.QUESTIONS[1]]
    assert "At 1,000 connections" in scaling and "switched context about once per request" in scaling
    limits = answers[server_answers.QUESTIONS[2]]
    assert "`select` server holds at most 1008 connections" in limits and "largest count, 1000" in limits
    fairness = answers[server_answers.QUESTIONS[3]]
    assert "`iterative`: at 10 connections it served 1 of 10" in fairness
    assert "`iterative` served a single connection in the whole window" in fairness
    for name in server_report.FIGURES:
        assert results.store.figure_path(name).is_file()
        assert "at 1,000 connections" in server_report.caption(name, results)


def test_a_report_without_a_servers_sweep_says_how_to_get_one():
    said = " ".join(block.text for block in server_report.absent())
    assert "./inv run-sweep --experiment servers" in said and said.startswith(server_report.HEADING)


def test_explorer_plots_models_against_connections(servers_sweep):
    explorer = Explorer(servers_sweep, roots=[servers_sweep.parent])
    assert explorer.x_axis.value == "connections" and explorer.metric.value == "requests_per_s"
    assert sorted(explorer.data["connections"].unique()) == [1, 10, 100, 1000]
    assert set(explorer.data["implementation"]) == set(SERVER_MODELS)
    explorer.compare.value = True
    assert explorer.baseline.value == "thread"
    crossed = explorer.crossovers.set_index("challenger")
    assert crossed.loc["epoll", "status"] == "crossover"
    assert "epoll: crossover at" in explorer.status.value and "connections" in explorer.status.value
    explorer.x_axis.value = "size_bytes"
    assert "crossovers are found along connections" in explorer.status.value


def test_idle_connections_and_a_further_baseline_are_answered_from_the_tables(tmp_path):
    """Synthetic: select's and poll's server CPU per request grows with idle connections, epoll's and uring's not;
    uring is compared with epoll, the further baseline the registry gives it."""
    trials = make_server_trials(
        models=("thread", "select", "poll", "epoll", "uring"),
        connections=(1, 10, 100),
        idle=(0, 900),
        idle_cost={"select": 0.5, "poll": 0.4},
        shapes={"uring": "better", "epoll": "same"},
    )
    directory = write_sweep(tmp_path / "data" / "idle", trials)
    store = SweepStore(directory, figures_root=tmp_path / "figures")
    analyze(store, plugins.draw, n_resamples=200)
    results = load_results(store)
    answers = dict(waiting.answers(results))
    idle = answers[waiting.IDLE_QUESTION]
    assert "from 0 to 900 idle connections" in idle and "With 100 busy connections" in idle
    assert "`select`, `poll` pay for the idle connections" in idle
    table, busy, fewest, most = waiting.growth(results)
    assert (busy, fewest, most) == (100, 0, 900)
    grown = dict(zip(table["model"], table["growth"], strict=True))
    assert grown["select"] == pytest.approx(5.5, rel=0.1) and grown["epoll"] == pytest.approx(1.0, rel=0.1)
    pair = answers["uring against epoll"]
    assert "significantly better at" in pair and "| requests per second | 10 |" in pair
    section = "\n".join(block.text for block in server_report.parts(results) if hasattr(block, "text"))
    assert waiting.IDLE_QUESTION in section and "uring against epoll" in section
    assert waiting.FLOOR_QUESTION not in section  # no floor measured, none stated

    floored = dataclasses.replace(
        results, manifest=dataclasses.replace(results.manifest, host_floor={"split_cpu": 30.0})
    )
    floor = dict(waiting.answers(floored))[waiting.FLOOR_QUESTION]
    assert "took on average 30.0 µs with CPU pinning `split_cpu`" in floor
    one = select(results.summary, metric="latency_mean_us", connections=1, idle_connections=0)
    for row in one.itertuples():
        assert f"| `{row.implementation}` | `split_cpu` |" in floor and fmt_num(row.mean - 30.0) in floor

    explorer = Explorer(directory, roots=[directory.parent])
    assert [value for _, value in explorer.idle_connections.options] == [0, 900]
    explorer.metric.value = "snd_cpu_us_per_request"
    quiet = explorer.data.set_index(["implementation", "connections"])["mean"]
    explorer.idle_connections.value = 900
    assert "900 idle connections" in explorer.status.value
    busy = explorer.data.set_index(["implementation", "connections"])["mean"]
    assert busy[("select", 100)] / quiet[("select", 100)] == pytest.approx(5.5, rel=0.1)
    assert busy[("epoll", 100)] / quiet[("epoll", 100)] == pytest.approx(1.0, rel=0.1)


@needs_root
def test_uring_takes_no_connection_once_every_one_is_in(bin_dir, pair):
    """An accept left armed would hold the listening socket past the server's end (until the kernel has torn its
    ring down) and keep the port from the next trial's server.  Once every connection is in, a stray one waits in
    the listen queue untaken (an armed accept would take it, and the server stop at a connection too many)."""
    stray = f"import socket, time; s = socket.create_connection(({pair.server_address!r}, {PORT})); time.sleep(1.5)"
    connecting = threading.Timer(0.6, run_in, (pair.client, [sys.executable, "-c", stray]))
    connecting.start()
    try:
        server, client, _ = run_model(bin_dir, pair, "uring", 4, duration=1.0)
    finally:
        connecting.join()
    assert server["connections"] == 4 and client["connections_served"] == 4
