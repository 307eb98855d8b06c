"""Open load: the load client's schedule, latency timed from it (coordinated omission corrected), a rate the
client cannot offer named as its own limit, the sweep's rate axis, and the report's highest rate within the
latency target with its interval."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.blocks import Markdown
from copylab.report.experiments.servers import open_load
from copylab.report.experiments.servers import report as server_report
from copylab.report.experiments.servers.figures import LATENCY_TARGET_US
from copylab.report.results import load_results
from copylab.report.sections import compose
from copylab.testbeds.netns import exec_prefix
from tests.conftest import needs_root
from tests.synthetic import make_server_trials, make_trials, write_sweep
from tests.test_servers import _inv, servers_sweep_run, sweep_namespaces, tagged_processes

PORT = 5403


def session(
    bin_dir: Path,
    pair,
    model: str,
    options: tuple[str, ...],
    duration: float = 0.6,
    stall_after: float | None = None,
    stalled: str = "server",
) -> tuple[subprocess.CompletedProcess[str], str]:
    """MODEL_server and load_client with OPTIONS over 20 connections: the client's result and the server's stderr.
    STALL_AFTER: stop the STALLED side (SIGSTOP; ip netns exec runs it in its own process) that many seconds after
    the client starts, for 0.2 s."""
    server = subprocess.Popen(
        [
            *exec_prefix(pair.server),
            str(bin_dir / f"{model}_server"),
            *("--bind", pair.server_address, "--port", str(PORT), "--size", "1000", "--timeout", "20"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    client = subprocess.Popen(
        [
            *exec_prefix(pair.client),
            str(bin_dir / "load_client"),
            *("--connect", pair.server_address, "--port", str(PORT), "--size", "1000"),
            *("--connections", "20", "--duration", str(duration), "--warmup", "0.2", *options),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    target = server if stalled == "server" else client
    stall = threading.Timer(stall_after, _stall, (target.pid,)) if stall_after else None
    try:
        if stall:
            stall.start()
        client_out, client_err = client.communicate(timeout=30)
        _, server_err = server.communicate(timeout=20)
    finally:
        if stall:
            stall.join()
        for process in (client, server):
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(client.args, client.returncode, client_out, client_err), server_err


def _stall(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    time.sleep(0.2)
    os.kill(pid, signal.SIGCONT)


@needs_root
@pytest.mark.serial  # a schedule kept to the microsecond: another test sharing the CPUs would break it
def test_open_load_keeps_its_schedule_and_verifies_every_response(bin_dir, pair):
    client, server_err = session(bin_dir, pair, "epoll", ("--rate", "4000", "--verify"))
    assert client.returncode == 0, client.stderr + server_err
    result = json.loads(client.stdout)
    assert result["offered_rate"] == 4000
    # the server keeps up with a rate this low: what was offered is what was served, within one request per
    # connection at each end of the window
    assert abs(result["requests"] - 4000 * result["measured_s"]) <= 2 * 20
    assert result["issue_lag_p99_us"] > 0 and 0 < result["latency_p50_us"] <= result["latency_p99_us"]
    assert result["latency_p99_us"] <= result["latency_p999_us"] <= result["latency_max_us"]


@needs_root
@pytest.mark.serial  # a schedule kept to the microsecond: another test sharing the CPUs would break it
def test_a_stalled_server_is_charged_the_wait_of_every_request_due_meanwhile(bin_dir, pair):
    """Coordinated omission: a server stopped for 0.2 s delays every request due in that time.  Timed from the
    schedule, more than 1% of the window's requests waited (p99 near the stall); a closed loop has one request per
    connection waiting through the stall, a small share of the window's, and its p99 does not see it."""
    stall_s = 0.2
    opened, server_err = session(bin_dir, pair, "epoll", ("--rate", "4000"), duration=1.0, stall_after=0.5)
    assert opened.returncode == 0, opened.stderr + server_err
    closed, server_err = session(bin_dir, pair, "epoll", (), duration=1.0, stall_after=0.5)
    assert closed.returncode == 0, closed.stderr + server_err
    opened_result, closed_result = json.loads(opened.stdout), json.loads(closed.stdout)
    for result in (opened_result, closed_result):  # both saw the stall
        assert result["latency_max_us"] >= 0.8 * stall_s * 1e6
    assert opened_result["latency_p99_us"] >= 0.5 * stall_s * 1e6
    assert closed_result["requests"] > 100 * 20  # so that the 20 stalled round trips are under 1%
    assert closed_result["latency_p99_us"] < 0.5 * stall_s * 1e6


@needs_root
@pytest.mark.serial  # a schedule kept to the microsecond: another test sharing the CPUs would break it
def test_a_client_stalled_in_the_window_names_its_own_limit(bin_dir, pair):
    """A client stopped for 0.2 s sends the requests due meanwhile late: that wait is its own, the bulk of the tail
    it would measure, and the trial says so in one line instead of charging the server."""
    client, _ = session(bin_dir, pair, "epoll", ("--rate", "4000"), duration=1.0, stall_after=0.5, stalled="client")
    assert client.returncode != 0 and client.stdout == ""
    assert client.stderr.count("\n") == 1 and "a limit of the client, not of the server" in client.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (("--rate", "-5"), "--rate: '-5' is not a positive whole number"),
        (("--rate", "2000000"), "--rate: 2000000 is out of range (0 to 1000000)"),
    ],
)
def test_load_client_refuses_a_bad_rate(bin_dir, args, message):
    load = ("--connect", "127.0.0.1", "--port", "5999", "--size", "64", "--connections", "4")
    result = subprocess.run([str(bin_dir / "load_client"), *load, *args], capture_output=True, text=True, timeout=5)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr


@needs_root
@pytest.mark.serial  # a schedule kept to the microsecond: another test sharing the CPUs would break it
def test_an_open_load_sweep_records_each_rate_and_leaves_nothing():
    name = f"test-open-{os.getpid()}"
    options = ("--models", "thread,epoll", "--connections", "20", "--load", "open", "--rates", "2000,8000")
    options += ("--trials", "1", "--duration", "0.3", "--warmup", "0.1")
    with servers_sweep_run(name, *options) as (result, directory):
        if result.returncode != 0:
            # A stall of this shared VM makes the client send late: that trial fails naming the client's limit (not
            # a made-up rate), and --resume runs it again.
            failed = SweepStore(directory).load()[0].query("status != 'ok'")
            assert failed["error"].str.contains("a limit of the client, not of the server").all(), failed["error"]
            result = _inv("run-sweep", "--name", name, "--resume", "--no-analyze", tag=name)
        assert result.returncode == 0, result.stderr[-2000:]
        trials, manifest = SweepStore(directory).load()
        assert manifest.parameters.load == "open" and tuple(manifest.parameters.rates) == (2000, 8000)
        trials = trials[trials["status"] == "ok"]
        assert len(trials) == 4
        assert sorted(trials["offered_rate"]) == [2000, 2000, 8000, 8000]
        assert trials["trial_id"].str.contains("-rate8000-r1").sum() == 2
        achieved = trials["requests_per_s"] / trials["offered_rate"]
        assert achieved.between(0.9, 1.1).all(), achieved
        assert trials["issue_lag_p99_us"].gt(0).all() and trials["latency_p999_us"].gt(0).all()
        assert tagged_processes(name) == []
        leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert not set(sweep_namespaces(name)) & set(leftovers.split())


# ------------------------------------------------------------------ the highest rate within the target


RATES = (1000, 2000, 4000, 8000, 16000)


def _curve(p99_at: dict[int, list[float]], failed: tuple[int, ...] = ()) -> pd.DataFrame:
    rows = [
        {"trial_id": f"{rate}-r{i}", "offered_rate": rate, "status": "ok", "latency_p99_us": value, "error": None}
        for rate, values in p99_at.items()
        for i, value in enumerate(values)
    ]
    failure = {"status": "failed", "latency_p99_us": np.nan, "error": "why"}
    rows += [{"trial_id": f"{rate}-failed", "offered_rate": rate, **failure} for rate in failed]
    return pd.DataFrame(rows)


def _rising(crossing: float, rng: np.random.Generator, trials: int = 4, spread: float = 0.05) -> dict[int, list]:
    """A p99 that grows as the square of the rate and reaches the target at CROSSING."""
    return {
        rate: list(LATENCY_TARGET_US * (rate / crossing) ** 2 * np.exp(rng.normal(0, spread, trials))) for rate in RATES
    }


def test_the_highest_rate_within_the_target_is_found_with_an_interval_around_it():
    rng = np.random.default_rng(3)
    for crossing in (1500.0, 5000.0, 12000.0):
        found = open_load.highest_rate(_curve(_rising(crossing, rng)))
        assert found is not None and not found.within_all and not found.beyond_all
        assert found.low <= crossing <= found.high
        assert found.estimate == pytest.approx(crossing, rel=0.1)
        assert found.high / found.low < 1.5  # 5% noise over 4 trials: a narrow interval


def test_a_curve_within_or_beyond_the_target_everywhere_says_so():
    rng = np.random.default_rng(4)
    assert open_load.highest_rate(_curve(_rising(1e6, rng))).within_all
    assert open_load.highest_rate(_curve(_rising(10.0, rng))).beyond_all


def test_no_rate_is_judged_from_the_first_where_a_trial_never_completed():
    """A rate where a trial failed (the client could not offer it every time) ends the curve: neither it nor the
    rates beyond it are judged, even where their trials completed."""
    p99 = _rising(1e6, np.random.default_rng(5))
    found = open_load.highest_rate(_curve({r: v for r, v in p99.items() if r != 4000}, failed=(4000,)))
    assert found.judged == (1000, 2000) and found.within_all
    found = open_load.highest_rate(_curve(p99, failed=(8000,)))  # three of four trials at 8000 completed
    assert found.judged == (1000, 2000, 4000)
    assert open_load.highest_rate(_curve({}, failed=(1000,))) is None
    # a failed trial that --resume ran again and completed counts as completed
    retried = _curve(p99, failed=(8000,))
    retried.loc[len(retried)] = {**retried.iloc[-1].to_dict(), "status": "ok", "latency_p99_us": 10.0, "error": None}
    assert open_load.highest_rate(retried).judged == RATES


def test_the_report_section_answers_from_an_open_load_sweep(tmp_path):
    """Every model's curve along the rate in the figure, its highest rate in the table, the failed rate with its
    reason; a report gives an open-load sweep its own section."""
    trials = make_server_trials(models=("thread", "epoll"), connections=(100,), trials=3)
    rows = []
    rng = np.random.default_rng(6)
    crossing = {"thread": 3000.0, "epoll": 6000.0}
    for rate in RATES:
        at = trials.copy()
        at["offered_rate"] = rate
        at["trial_id"] = at["trial_id"].str.replace("-r", f"-rate{rate}-r", regex=False)
        at["requests_per_s"] = float(rate)
        at["latency_p99_us"] = [
            LATENCY_TARGET_US * (rate / crossing[m]) ** 2 * np.exp(rng.normal(0, 0.05)) for m in at["implementation"]
        ]
        if rate == RATES[-1]:
            at["status"], at["error"] = (
                "failed",
                "client: the load client was on its CPU 99% of the window, a limit of the client",
            )
            at.loc[:, "latency_p99_us"] = np.nan
        rows.append(at)
    frame = pd.concat(rows, ignore_index=True)
    frame["order_index"] = range(len(frame))
    directory = write_sweep(
        tmp_path / "data" / "open", frame, {"parameters": {"load": "open", "rates": list(RATES), "connections": [100]}}
    )
    store = SweepStore(directory, figures_root=tmp_path / "figures")
    analyze(store, plugins.draw, n_resamples=200)
    results = load_results(store)
    assert store.figure_path("latency_vs_offered_rate").is_file()
    text = open_load.answer_target(results)
    assert "`thread`" in text and "`epoll`" in text and "16k/s" in text and "a limit of the client" in text
    for model, rate in crossing.items():
        found = open_load.highest_rate(results.trials[results.trials["implementation"] == model])
        assert found.low <= rate <= found.high
    # beside a copies sweep and a closed-loop servers sweep, the open one gets a section of its own
    others = []
    for name, trials in (
        ("copies", make_trials(sweep="copies", sizes=(64, 65536), workloads=("stream",), threads=(1,))),
        ("closed", make_server_trials(sweep="closed", models=("thread", "epoll"), connections=(1, 100), trials=3)),
    ):
        other = SweepStore(write_sweep(tmp_path / "data" / name, trials), figures_root=tmp_path / "figures")
        analyze(other, plugins.draw, n_resamples=200)
        others.append(load_results(other))
    sweeps = compose.arrange([*others, results])
    assert sweeps.main is others[0] and not sweeps.further
    headings = [
        re.sub(r"^# Appendix [A-Z]: ", "# ", block.text)  # the sections are lettered appendices
        for block in compose.blocks(sweeps, date(2026, 1, 2))
        if isinstance(block, Markdown)
    ]
    assert server_report.HEADING in headings and open_load.HEADING in headings
    assert open_load.ABSENT not in headings
    # without it, the closed-loop section says how to get it
    without = [
        block.text for block in compose.blocks(compose.arrange(others), date(2026, 1, 2)) if isinstance(block, Markdown)
    ]
    assert open_load.ABSENT in without and open_load.HEADING not in without


@needs_root
@pytest.mark.serial  # instrumented, the client needs its CPU to itself to keep the schedule
@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_the_sanitized_open_loop_runs_clean(pair, sanitizer):
    """ASan+UBSan and TSan builds of the load client's open loop (three threads sharing the rate) and a server."""
    from copylab.programs.build import build

    sanitized = build(sanitizer) / "bin"
    client, server_err = session(sanitized, pair, "epoll", ("--rate", "3000", "--threads", "3", "--verify"), 0.4)
    assert client.returncode == 0, client.stderr + server_err
    assert "Sanitizer" not in client.stderr + server_err and "runtime error" not in client.stderr + server_err
    assert json.loads(client.stdout)["connections_served"] == 20
