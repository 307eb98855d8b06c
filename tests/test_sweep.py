"""Sweeps in real namespaces: complete rows, per-side counters, interruption, resume, failures."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.declarations import config
from copylab.declarations.config import SweepConfig
from copylab.declarations.schema import COLUMN_NAMES, COLUMNS, PERF_EVENTS
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.measure.running.drivers import CopylabPrograms
from copylab.paths import ROOT
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.experiments.copies.basics import layout
from copylab.report.results import load_results
from copylab.testbeds import netns
from copylab.vocabulary.values import LAYOUTS, NO_LAYOUT
from tests.conftest import needs_root
from tests.synthetic import HARDWARE_EVENTS

TAG = os.getpid() % 100000
NAMESPACES = (f"clsweep{TAG}_s", f"clsweep{TAG}_c")


def tiny(name: str, **changes) -> SweepConfig:
    settings = dict(
        implementations=["two_copy", "zero_copy"],
        workloads=["stream", "rr"],
        sizes=[1024, 16384],
        rr_sizes=[512],
        threads=[1, 2],
        trials=2,
        duration_s=0.2,
        warmup_s=0.1,
        namespaces=list(NAMESPACES),
        receive=["copy"],
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    )
    settings.update(changes)
    return config.make_config(name, "quick", **settings)


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


def leftovers(sweep_name: str) -> dict[str, object]:
    """What a sweep could leave behind; its trial directory's name marks its processes' arguments."""
    marker = f"copylab-trial-{sweep_name}-"
    return {
        "namespaces": sorted(name for name in netns.existing_namespaces() if name.startswith(f"clsweep{TAG}")),
        "processes": subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split(),
        "trial_dirs": [p.name for p in Path("/tmp").glob(f"{marker}*")]
        + [p.name for p in Path("/dev/shm").glob(f"copylab-files-{sweep_name}-*")],
    }


@needs_root
def test_tiny_sweep_rows_and_counters(tmp_path):
    config = tiny("tiny")
    result = sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    rows = read_rows(tmp_path / "tiny" / "trials.csv")
    planned = 2 * 2 * 2 * 2 + 2 * 1 * 2 * 2  # stream + rr grid, times trials
    assert result.planned == planned == len(rows) and result.ok == planned
    assert sorted(int(r["order_index"]) for r in rows) == list(range(planned))
    assert len({r["trial_id"] for r in rows}) == planned
    for row in rows:
        assert row["status"] == "ok", row["error"]
        for column in COLUMNS:
            if column.required:
                assert row[column.name] != "", column.name
        for column in ("measured_s", "bytes", "throughput_gbps", "snd_cpu_sys_s", "rcv_cpu_sys_s", "retransmits"):
            assert row[column] != "", column
        assert float(row["throughput_gbps"]) > 0
        for side in ("snd", "rcv"):
            for event in ("task-clock", "context-switches", "cpu-migrations"):
                assert row[f"{side}_{PERF_EVENTS[event]}"] != "", (side, event)
            # perf covers the measured window only: task-clock is close to the rusage CPU time.
            cpu_ms = (float(row[f"{side}_cpu_user_s"]) + float(row[f"{side}_cpu_sys_s"])) * 1000
            assert float(row[f"{side}_task_clock_ms"]) == pytest.approx(cpu_ms, rel=0.35, abs=30)
            for event in HARDWARE_EVENTS:
                column = f"{side}_{PERF_EVENTS[event]}"
                if column in row["perf_missing"]:
                    assert row[column] == "", f"{column} must be empty, not 0, when missing"
                    assert f"{column}: <not supported>" in row["perf_missing"]
        if row["implementation"] == "zero_copy":
            assert int(row["zc_completed"]) == int(row["zc_sends"]) > 0
        else:
            assert row["zc_sends"] == ""
        if row["workload"] == "rr":
            assert float(row["latency_p50_us"]) <= float(row["latency_p99_us"])
    manifest = SweepStore(tmp_path / "tiny").read_manifest()
    assert manifest.complete and manifest.trials_sha256
    assert manifest.parameters.sizes == (1024, 16384)
    assert set(manifest.perf.supported_events) >= {"task-clock", "context-switches"}
    assert leftovers("tiny") == {"namespaces": [], "processes": [], "trial_dirs": []}
    # Every ok trial's window was sampled (as root), its samples charged to sides and categories; the sampler's
    # perf record and its files are gone.
    profile = SweepStore(tmp_path / "tiny").read_profile()
    assert manifest.sampler is not None and manifest.sampler.sampled, manifest.sampler
    assert isinstance(profile, pd.DataFrame) and set(profile["trial_id"]) == {r["trial_id"] for r in rows}
    assert (profile.groupby("trial_id")["samples"].sum() > 0).all()
    assert not list(Path(tempfile.gettempdir()).glob("copylab-samples-tiny-*"))


def _default_sigint() -> None:
    # A suite started in the background inherits SIGINT ignored; the CLI under test must feel Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "invoke", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


@needs_root
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_then_resume(signum):
    name = f"test-interrupt-{TAG}-{signum}"
    data = ROOT / "data" / name
    shutil.rmtree(data, ignore_errors=True)
    args = (
        "run-sweep",
        "--name",
        name,
        "--implementations",
        "one_copy,two_copy",
        "--no-calibrate",  # the calibration is not under test here: it costs each sweep about 10 s
        "--workloads",
        "stream",
        "--sizes",
        "1K,4K,16K",
        "--threads",
        "1,2",
        "--trials",
        "2",
        # short windows: the test holds which trials ran and which rows were kept, not what they measured
        "--duration",
        "0.05",
        "--warmup",
        "0.02",
        "--namespaces",
        ",".join(NAMESPACES),
        "--no-analyze",
        "--receive",
        "copy",
    )
    try:
        process = cli(*args)
        trials_csv = data / "trials.csv"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not trials_csv.exists() or len(read_rows(trials_csv)) < 5):
            time.sleep(0.05)
        os.killpg(process.pid, signum) if signum == signal.SIGINT else process.send_signal(signum)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode != 0
        assert "interrupted" in stderr
        rows = read_rows(trials_csv)
        assert 5 <= len(rows) < 24
        assert all(row["status"] in ("ok", "failed") and row["trial_id"] for row in rows)
        assert trials_csv.read_bytes().endswith(b"\n")
        assert leftovers(name) == {"namespaces": [], "processes": [], "trial_dirs": []}
        first = {row["trial_id"] for row in rows if row["status"] == "ok"}

        resumed = cli(*args, "--resume")
        _stdout, stderr = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, stderr
        rows = read_rows(trials_csv)
        ok = [row["trial_id"] for row in rows if row["status"] == "ok"]
        assert len(ok) == len(set(ok)) == 24, "resume runs exactly the missing trials"
        assert first <= set(ok)
        assert SweepStore(data).read_manifest().complete
        assert leftovers(name) == {"namespaces": [], "processes": [], "trial_dirs": []}
    finally:
        shutil.rmtree(data, ignore_errors=True)


@needs_root
def test_dead_server_is_a_failed_trial_and_the_sweep_goes_on(tmp_path):
    stop = threading.Event()
    killed = []

    def kill_first_server() -> None:
        while not stop.is_set() and not killed:
            pids = subprocess.run(
                ["pgrep", "-f", "two_copy_server .*copylab-trial-dead-"], capture_output=True, text=True
            ).stdout.split()
            for pid in pids:
                time.sleep(0.15)  # inside its measured window
                try:
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
                break
            time.sleep(0.01)

    killer = threading.Thread(target=kill_first_server)
    killer.start()
    try:
        result = sweep.run(
            tiny(
                "dead",
                implementations=["two_copy"],
                workloads=["stream"],
                sizes=[4096],
                threads=[1],
                trials=3,
                duration_s=0.5,
            ),
            SweepStore.under(tmp_path, "dead"),
            progress=False,
        )
    finally:
        stop.set()
        killer.join()
    rows = read_rows(tmp_path / "dead" / "trials.csv")
    assert killed and len(rows) == 3
    failed = [row for row in rows if row["status"] == "failed"]
    assert len(failed) == 1 and result.failed == 1 and result.ok == 2
    assert failed[0]["error"].startswith(("server:", "client:"))
    assert failed[0]["throughput_gbps"] == ""
    assert not SweepStore(tmp_path / "dead").read_manifest().complete


BAD_OPTIONS = [
    (("--implementations", "four_copy"), "unknown 'four_copy'"),
    (("--sizes", "0"), "sizes: 0 is out of range (8 to 67108864)"),
    (("--sizes", "64,abc"), "is not a comma-separated list of numbers"),
    (("--threads", "0"), "threads: 0 is out of range (1 to 64)"),
    (("--threads", "1,1"), "names a value twice"),
    (("--implementations", "one_copy,one_copy"), "names a value twice"),
    (("--pinning", "cpu7"), "unknown 'cpu7'"),
    (("--duration", "-1"), "duration: -1.0 is out of range (above 0 to 3600)"),
    (("--trials", "many"), "--trials: 'many' is not a number"),
    (("--profile", "huge"), "profile: unknown 'huge'"),
    (("--namespaces", "Bad Name,x"), "namespace name"),
    (("--receive", "peek"), "receive: unknown 'peek'"),
    (("--receive", "copy,copy"), "names a value twice"),
    (("--implementations", "one_copy", "--receive-for", "two_copy"), "receive-for: two_copy"),
    (("--congestion-control", "nosuch"), "--congestion-control nosuch: the kernel of this machine offers"),
]


@pytest.mark.parametrize("options,message", BAD_OPTIONS, ids=[" ".join(o) for o, _ in BAD_OPTIONS])
def test_bad_sweep_options_fail_before_anything_is_made(options, message):
    names = () if "--namespaces" in options else ("--namespaces", ",".join(NAMESPACES))
    process = cli("run-sweep", "--name", f"bad-{TAG}", *names, *options)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert stderr.count("\n") == 1 and stderr.startswith("copylab: error: ") and message in stderr, stderr
    assert not set(NAMESPACES) & netns.existing_namespaces()
    assert not (ROOT / "data" / f"bad-{TAG}").exists()


@pytest.mark.parametrize("name", ["a/b", "has space", "", "../up", ".hidden"])
def test_bad_sweep_names(name):
    with pytest.raises(CopylabError, match="sweep name"):
        tiny(name)


def test_existing_sweep_is_not_mixed_without_resume(tmp_path):
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "trials.csv").write_text(",".join(COLUMN_NAMES) + "\n")
    with pytest.raises(CopylabError, match="already holds a sweep"):
        sweep.run(tiny("done"), SweepStore.under(tmp_path, "done"), progress=False)


def test_plan_is_seeded_and_complete():
    config = tiny("plan")
    first, again, other = schedule.plan(config), schedule.plan(config), schedule.plan(tiny("plan", seed=2))
    assert first == again and [t.trial_id for t in first] != [t.trial_id for t in other]
    assert sorted(t.trial_id for t in first) == sorted(t.trial_id for t in other)
    assert len(first) == 24


def test_truncated_tail_is_repaired(tmp_path):
    path = tmp_path / "trials.csv"
    path.write_text("a,b\n1,2\n3,")
    store = SweepStore(tmp_path)
    assert store.repair_truncated_tail()
    assert path.read_text() == "a,b\n1,2\n"
    assert not store.repair_truncated_tail()


def test_precise_enough_uses_the_t_interval():
    # mean 10, sd 0.1, n 4: half-width = t(0.975, 3) * 0.1 / 2 = 3.182 * 0.05 = 0.159 -> 1.6% of the mean
    values = [9.9, 10.1, 9.9, 10.1]
    assert schedule.precise_enough([9.9, 10.1, 9.9, 10.1][:4], 0.02)
    assert not schedule.precise_enough(values, 0.015)
    assert not schedule.precise_enough([10.0, 10.0], 0.5), "fewer than 3 trials is never enough"


def test_adaptive_rounds_repeat_only_imprecise_configurations():
    config = tiny(
        "adaptive",
        workloads=["stream"],
        sizes=[1024],
        threads=[1, 2],
        target_ci=0.05,
        max_trials=5,
        design="randomized",
    )
    stable, noisy = schedule.configurations(config)[0], schedule.configurations(config)[1]
    measured: dict = {}
    rounds = []
    for batch in schedule.adaptive_rounds(config, measured):
        rounds.append(batch)
        for spec in batch:
            key = schedule.Configuration(
                spec.implementation.name,
                spec.workload,
                spec.size_bytes,
                spec.threads,
                spec.connections,
                spec.pinning,
                spec.receive,
            )
            value = 10.0 if key == stable else 10.0 + 5 * (-1) ** spec.repetition
            measured.setdefault(key, []).append(value)
    assert [len(batch) for batch in rounds] == [4, 4, 4, 3, 3], "stable ones stop after 3 trials"
    assert len(measured[stable]) == 3 and len(measured[noisy]) == 5
    order = [spec.order_index for batch in rounds for spec in batch]
    assert order == list(range(len(order)))


@needs_root
def test_every_pinning_runs_and_is_recorded(tmp_path):
    config = tiny(
        "pinning",
        implementations=["one_copy"],
        workloads=["stream"],
        sizes=[16384],
        threads=[2],
        trials=1,
        pinning=["none", "same_cpu", "split_cpu"],
    )
    result = sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    rows = read_rows(tmp_path / "pinning" / "trials.csv")
    assert result.ok == 3 and sorted(row["pinning"] for row in rows) == ["none", "same_cpu", "split_cpu"]
    for row in rows:
        assert row["status"] == "ok" and float(row["throughput_gbps"]) > 0 and row["retransmits"] != ""


@needs_root
def test_unbuilt_programs_are_named_before_anything_is_made(tmp_path, monkeypatch):
    monkeypatch.setattr("copylab.programs.build.program", lambda name, sanitize=None: tmp_path / "nowhere" / name)
    with pytest.raises(CopylabError, match=r"two_copy_server is not built: run `\./inv build` first"):
        sweep.run(tiny("unbuilt"), SweepStore.under(tmp_path, "unbuilt"), progress=False)
    assert not (tmp_path / "unbuilt").exists()
    assert not any(name.startswith(f"clsweep{TAG}") for name in netns.existing_namespaces())


@needs_root
def test_every_receive_mode_and_the_file_senders_run_verified(tmp_path):
    settings = tiny(
        "receive",
        implementations=["zero_copy", "read_send"],
        workloads=["stream"],
        sizes=[16384],
        threads=[1],
        trials=1,
        receive=["copy", "truncate", "mmap"],
        verify=True,
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    rows = read_rows(tmp_path / "receive" / "trials.csv")
    assert result.ok == len(rows) == 6, [row["error"] for row in rows]
    for row in rows:
        assert row["status"] == "ok" and float(row["throughput_gbps"]) > 0
        mapped = row["rx_mapped_bytes"], row["rx_copied_bytes"], row["rx_copybuf_bytes"]
        if row["receive"] == "mmap":
            assert sum(map(int, mapped)) == int(row["bytes"]) > 0
        else:
            assert mapped == ("", "", "")
    # The zero-copy sender's pages can map over veth, but whether they do depends on how much is queued at each
    # call: with no more than the copy buffer queued the kernel copies it all inside the call. A loaded host
    # changes that (0% to most mapped here), so only the call's taking the bytes is held here; test_sender_pages
    # holds mapping itself, alone on the machine.
    zero_copy_mmap = next(r for r in rows if r["implementation"] == "zero_copy" and r["receive"] == "mmap")
    assert int(zero_copy_mmap["rx_mapped_bytes"]) + int(zero_copy_mmap["rx_copybuf_bytes"]) > 0
    assert leftovers("receive") == {"namespaces": [], "processes": [], "trial_dirs": []}


def test_receive_for_gives_the_other_receive_modes_to_some_implementations_only():
    settings = tiny(
        "plan-receive",
        workloads=["stream"],
        sizes=[1024],
        threads=[1],
        trials=1,
        receive=["copy", "truncate"],
        receive_for=["zero_copy"],
    )
    planned = sorted((spec.implementation.name, spec.receive) for spec in schedule.plan(settings))
    assert planned == [("two_copy", "copy"), ("zero_copy", "copy"), ("zero_copy", "truncate")]
    everyone = tiny("plan-all", workloads=["stream"], sizes=[1024], threads=[1], trials=1, receive=["copy", "truncate"])
    assert len(schedule.plan(everyone)) == 4, "an explicit --receive alone is for every implementation"


@needs_root
def test_an_implementation_that_cannot_run_here_is_reported_and_skipped(tmp_path, monkeypatch, capfd):
    real = CopylabPrograms.unavailable
    monkeypatch.setattr(
        CopylabPrograms,
        "unavailable",
        lambda self, run, sanitize: (
            "the test says so" if self.declared.name == "zero_copy" else real(self, run, sanitize)
        ),
    )
    result = sweep.run(
        tiny("unavailable", workloads=["stream"], sizes=[4096], threads=[1], trials=1),
        SweepStore.under(tmp_path, "unavailable"),
        progress=False,
    )
    assert result.unavailable == {"zero_copy": "the test says so"}
    assert "copylab: zero_copy is unavailable here: the test says so; its trials are not run" in capfd.readouterr().err
    rows = read_rows(tmp_path / "unavailable" / "trials.csv")
    assert [row["implementation"] for row in rows] == ["two_copy"] and result.ok == 1
    manifest = SweepStore(tmp_path / "unavailable").read_manifest()
    assert manifest.unavailable == {"zero_copy": "the test says so"} and manifest.complete
    with pytest.raises(CopylabError, match="no implementation of the sweep can run here"):
        sweep.run(
            tiny("none-left", implementations=["zero_copy"], workloads=["stream"], sizes=[4096], threads=[1], trials=1),
            SweepStore.under(tmp_path, "none-left"),
            progress=False,
        )


@needs_root
def test_every_layout_runs_verified_is_recorded_and_compared(tmp_path):
    """--layout: every sender that holds the message in memory, in every layout, its bytes verified; the rows say
    which layout and in-flight limit ran, and the report's layout section reads them."""
    settings = tiny(
        "layouts",
        implementations=["two_copy", "one_copy", "zero_copy", "sendfile"],
        workloads=["stream"],
        sizes=[1024, 65536],
        threads=[1],
        trials=2,
        layout=["fields", "aligned", "contiguous"],
        layout_for=["two_copy", "one_copy", "zero_copy"],
        zc_inflight=128 << 10,
        verify=True,
        kernel_copies=True,  # the layout section reads the transmitted skbs the counts give
        # 40 trials: short windows keep them to seconds, and every byte, page and fragment held here is still counted
        duration_s=0.05,
        warmup_s=0.02,
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    rows = read_rows(tmp_path / "layouts" / "trials.csv")
    assert result.ok == len(rows) == (3 * 3 + 1) * 2 * 2, [row["error"] for row in rows if row["error"]]
    ran = {(row["implementation"], row["layout"]) for row in rows}
    assert ran == {(name, layout) for name in ("two_copy", "one_copy", "zero_copy") for layout in LAYOUTS} | {
        ("sendfile", NO_LAYOUT)
    }
    assert {row["zc_inflight_bytes"] for row in rows} == {str(128 << 10)}
    store = SweepStore(tmp_path / "layouts")
    analyze(store, plugins.draw, n_resamples=200)
    results = load_results(store)
    assert set(results.summary["layout"]) == {"fields", NO_LAYOUT}, "the study's statements see its layout only"
    text = layout.section(results)
    assert text is not None and "`one_copy` (contiguous layout)" in text and "| aligned |" in text
    pinned = {
        (row["implementation"], row["layout"], int(row["size_bytes"])): float(row["zc_pages_per_message"])
        for row in rows
        if row["zc_pages_per_message"]
    }
    assert {implementation for implementation, _, _ in pinned} == {"zero_copy"}, "only a zero-copy sender pins"
    pinned = {(layout, size): pages for (_, layout, size), pages in pinned.items()}
    assert pinned[("contiguous", 65536)] == pinned[("aligned", 65536)] == 16 and pinned[("contiguous", 1024)] == 1
    assert "Pages pinned per message" in text
    assert "What the sender's kernel transmitted" in text and "| Page fragments per skb |" in text
    assert leftovers("layouts") == {"namespaces": [], "processes": [], "trial_dirs": []}


def test_a_layout_is_refused_in_one_line_where_it_means_nothing():
    with pytest.raises(CopylabError, match=r"^layout: sendfile's message layout cannot be chosen"):
        tiny("x", implementations=["one_copy", "sendfile"], layout=["contiguous"])
    with pytest.raises(CopylabError, match=r"^layout: the servers experiment's responses are one buffer"):
        config.make_config("x", experiment="servers", layout=["aligned"])
    with pytest.raises(CopylabError, match=r"^layout: unknown 'packed' \(choose from fields, aligned, contiguous\)"):
        tiny("x", layout=["packed"])
