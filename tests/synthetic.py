"""Schema-valid synthetic sweeps with a known truth, for tests.

    from tests.synthetic import make_trials, write_sweep
    df = make_trials(seed=1)                        # one_copy overtakes two_copy at 4 KiB
    df = make_trials(shapes={"one_copy": "same"})    # identical curves
    directory = write_sweep(tmp_path / "data" / "synthetic", df)

Stream throughput of two_copy is 2 + 1.5 * (log2(size) - 6) Gbit/s (2 at 64 B,
20 at 256 KiB).  A challenger's curve is given by its shape:

    float s   baseline + 1 Gbit/s per doubling * (log2(size) - log2(s)), floored at
              a quarter of the baseline: it overtakes two_copy exactly at size s and
              the difference is linear in log2(size), so interpolating between two
              tested sizes recovers s without bias
    "worse"   0.75 x baseline        "better"  1.25 x baseline
    "same"    the baseline

Every trial multiplies the true value by a normal factor with sd NOISE_CV.
rr latency: 20 us + size / 1 GB/s, x (1 + 0.3 (threads - 1)), x 0.98 for
one_copy and 1.3 for zero_copy.  CPU time, context switches, retransmits and
zero-copy counters are filled plausibly; hardware counters are NaN (with
perf_missing saying so) unless hardware_counters=True.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from copylab.declarations import implementations as registry
from copylab.declarations import schema
from copylab.record.manifest import Manifest
from copylab.record.store import SweepStore
from copylab.vocabulary.values import NO_LAYOUT

# perf's hardware events, which these KVM guests report <not supported>.
HARDWARE_EVENTS = (
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "L1-dcache-load-misses",
    "LLC-load-misses",
)
SIDES = ("snd", "rcv")
SIZES = tuple(2**k for k in range(6, 19))  # 64 B .. 256 KiB
RR_SIZES = (64, 1024, 16384)
DEFAULT_SHAPES: dict[str, float | str] = {"one_copy": 4096.0, "zero_copy": "worse", "iperf3": "worse"}
_CPU_NS_PER_BYTE = {"two_copy": 0.5, "one_copy": 0.42, "zero_copy": 0.45, "iperf3": 0.5}
_RR_FACTOR = {"two_copy": 1.0, "one_copy": 0.98, "zero_copy": 1.3, "iperf3": 1.0}
_DURATION_S = 2.0


def _study_layout(implementation: str) -> str:
    """The layout a sweep runs IMPLEMENTATION in by default (copylab.measure.planning.schedule.layouts_of)."""
    return registry.fixed_layout(implementation) or registry.STUDY_LAYOUT


def baseline_throughput_gbps(size: float) -> float:
    """True two_copy stream throughput at SIZE bytes."""
    return 2.0 + 1.5 * (np.log2(size) - 6)


def true_throughput_gbps(size: float, shape: float | str) -> float:
    """True stream throughput at SIZE bytes of an implementation with SHAPE (see the module docstring)."""
    base = baseline_throughput_gbps(size)
    if shape == "same":
        return base
    if shape == "worse":
        return 0.75 * base
    if shape == "better":
        return 1.25 * base
    return max(base + 1.0 * (np.log2(size) - np.log2(float(shape))), 0.25 * base)


def make_trials(
    *,
    sweep: str = "synthetic",
    implementations: Iterable[str] = ("two_copy", "one_copy", "zero_copy"),
    workloads: Iterable[str] = ("stream", "rr"),
    sizes: Iterable[int] = SIZES,
    rr_sizes: Iterable[int] = RR_SIZES,
    threads: Iterable[int] = (1, 2),
    pinnings: Iterable[str] = ("same_cpu",),
    receives: Iterable[str] = ("copy",),
    trials: int = 5,
    shapes: Mapping[str, float | str] | None = None,
    noise_cv: float = 0.03,
    hardware_counters: bool = False,
    failed: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """A trials DataFrame with every schema column, one row per trial, in seeded random order.

    SHAPES overrides DEFAULT_SHAPES per implementation; FAILED randomly chosen
    trials get status failed and NaN measurements.
    """
    rng = np.random.default_rng(seed)
    shapes = {**DEFAULT_SHAPES, **(shapes or {})}
    configs = [
        (impl, workload, size, n_threads, pinning, receive, rep)
        for impl in implementations
        for workload in workloads
        if workload in registry.get(impl).driver.workloads
        for size in (sizes if workload == "stream" else rr_sizes)
        for n_threads in threads
        for pinning in pinnings
        for receive in receives
        if receive in registry.get(impl).driver.receive_modes
        for rep in range(1, trials + 1)
    ]
    rows = [_trial(rng, sweep, *config, shapes, noise_cv, hardware_counters) for config in configs]
    df = pd.DataFrame(rows)
    order = rng.permutation(len(df))
    df["order_index"] = order
    start = pd.Timestamp("2025-01-01T00:00:00Z")
    df["started_at"] = [(start + pd.Timedelta(seconds=3 * i)).isoformat() for i in order]
    if failed:
        _fail(df, rng.choice(len(df), size=failed, replace=False))
    df = df.sort_values("order_index").reset_index(drop=True)
    return _typed(df)


# The servers experiment: thread's requests/s grow with connections up to SATURATION_RPS; a model's SHAPE
# relative to it is read like a copies shape, along connections instead of size (a float c: it overtakes
# thread exactly at c connections, 10% per doubling).  The iterative server serves one connection only.
SERVER_MODELS = ("iterative", "thread", "fork", "select", "poll", "epoll")
CONNECTIONS = (1, 10, 100, 1000)
DEFAULT_SERVER_SHAPES: dict[str, float | str] = {"fork": "worse", "select": 30.0, "poll": 30.0, "epoll": 30.0}
SINGLE_RPS = 15000.0
SATURATION_RPS = 130000.0
_PER_REQUEST_SWITCHES = {"iterative": 1.0, "thread": 1.0, "fork": 1.0}


def thread_requests_per_s(connections: float) -> float:
    """True requests per second of a thread-per-connection server at CONNECTIONS."""
    return min(SINGLE_RPS * connections, SATURATION_RPS)


def true_requests_per_s(connections: float, shape: float | str) -> float:
    base = thread_requests_per_s(connections)
    if shape == "serial":
        return SINGLE_RPS
    if shape == "same":
        return base
    if shape == "worse":
        return 0.75 * base
    if shape == "better":
        return 1.25 * base
    return base * (1 + 0.1 * (np.log2(connections) - np.log2(float(shape))))


def make_server_trials(
    *,
    sweep: str = "synthetic-servers",
    models: Iterable[str] = SERVER_MODELS,
    connections: Iterable[int] = CONNECTIONS,
    rr_sizes: Iterable[int] = (64,),
    trials: int = 5,
    shapes: Mapping[str, float | str] | None = None,
    noise_cv: float = 0.03,
    seed: int = 0,
    idle: Iterable[int] = (0,),
    idle_cost: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """A servers-experiment trials DataFrame (every schema column), in seeded random order.  IDLE_COST: per model,
    the server's CPU per request grows by this share per 100 idle connections (IDLE)."""
    rng = np.random.default_rng(seed)
    shapes = {**DEFAULT_SERVER_SHAPES, "iterative": "serial", **(shapes or {})}
    rows = []
    for model in models:
        for size in rr_sizes:
            for count in connections:
                for silent in idle:
                    grows = 1 + (idle_cost or {}).get(model, 0.0) * silent / 100
                    for rep in range(1, trials + 1):
                        shape = shapes.get(model, "same")
                        rows.append(_server_trial(rng, sweep, model, size, count, rep, shape, noise_cv, silent, grows))
    df = pd.DataFrame(rows)
    order = rng.permutation(len(df))
    df["order_index"] = order
    start = pd.Timestamp("2025-01-01T00:00:00Z")
    df["started_at"] = [(start + pd.Timedelta(seconds=3 * i)).isoformat() for i in order]
    return _typed(df.sort_values("order_index").reset_index(drop=True))


def _server_trial(
    rng: np.random.Generator,
    sweep: str,
    model: str,
    size: int,
    connections: int,
    rep: int,
    shape: float | str,
    noise_cv: float,
    idle: int = 0,
    cost_factor: float = 1.0,
) -> dict[str, Any]:
    measured_s = _DURATION_S * (1 + rng.uniform(0, 0.002))
    rps = true_requests_per_s(connections, shape) * rng.normal(1.0, noise_cv)
    requests = int(rps * measured_s)
    served = 1 if shape == "serial" else connections
    latency = served / rps * 1e6  # Little's law over the connections actually served
    server_busy = min(1.0, rps / SATURATION_RPS) * 0.99
    switches = _PER_REQUEST_SWITCHES.get(model, 0.01)
    return {
        "sweep": sweep,
        "trial_id": f"{model}-rr-{size}-1-{connections}-split_cpu-copy{f'-idle{idle}' if idle else ''}-r{rep}",
        "experiment": "servers",
        "implementation": model,
        "model": model,
        "workload": "rr",
        "size_bytes": size,
        "threads": 1,
        "connections": connections,
        "pinning": "split_cpu",
        "receive": "copy",
        "layout": NO_LAYOUT,
        "idle_connections": idle,
        "offered_rate": 0,
        "repetition": rep,
        "status": "ok",
        "error": None,
        "measured_s": measured_s,
        "bytes": requests * size,
        "messages": requests,
        "throughput_gbps": requests * size * 8 / measured_s / 1e9,
        "latency_mean_us": latency,
        "latency_p50_us": 0.95 * latency,
        "latency_p99_us": 2.5 * latency,
        "latency_max_us": 6 * latency,
        "requests_per_s": requests / measured_s,
        "connections_served": served,
        "fairness": served / connections,
        "snd_cpu_user_s": 0.1 * server_busy * measured_s * cost_factor,
        "snd_cpu_sys_s": 0.9 * server_busy * measured_s * cost_factor,
        "snd_ctx_voluntary": int(switches * requests),
        "snd_ctx_involuntary": int(rng.integers(0, 10)),
        "rcv_cpu_user_s": 0.1 * server_busy * measured_s,
        "rcv_cpu_sys_s": 0.85 * server_busy * measured_s,
        "rcv_ctx_voluntary": int(rng.integers(0, 10)),
        "rcv_ctx_involuntary": int(rng.integers(0, 10)),
        "perf_missing": "; ".join(
            f"{side}_{schema.PERF_EVENTS[event]}: <not supported>" for side in SIDES for event in HARDWARE_EVENTS
        ),
        "trial_wall_s": measured_s + 0.3,
    }


def write_sweep(directory: str | Path, df: pd.DataFrame, manifest_overrides: Mapping[str, Any] | None = None) -> Path:
    """Write DF as DIRECTORY/trials.csv with a matching, complete manifest.json; return DIRECTORY.

    MANIFEST_OVERRIDES is merged into the generated manifest (nested dicts
    merged key by key), e.g. {"parameters": {"sizes": [64]}} or
    {"trials_sha256": "0" * 64}.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "trials.csv"
    df.to_csv(path, index=False, lineterminator="\n")
    manifest = _merge(_manifest(df, hashlib.sha256(path.read_bytes()).hexdigest()), manifest_overrides or {})
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return directory


def _trial(
    rng: np.random.Generator,
    sweep: str,
    impl: str,
    workload: str,
    size: int,
    threads: int,
    pinning: str,
    receive: str,
    rep: int,
    shapes: Mapping[str, float | str],
    noise_cv: float,
    hardware_counters: bool,
) -> dict[str, Any]:
    noise = rng.normal(1.0, noise_cv)
    measured_s = _DURATION_S * (1 + rng.uniform(0, 0.002))
    row: dict[str, Any] = {
        "sweep": sweep,
        "trial_id": f"{impl}-{workload}-{size}-{threads}-{threads}-{pinning}-{receive}-r{rep}",
        "experiment": "copies",
        "implementation": impl,
        "workload": workload,
        "size_bytes": size,
        "threads": threads,
        "connections": threads,
        "pinning": pinning,
        "receive": receive,
        "layout": _study_layout(impl),
        "idle_connections": 0,
        "offered_rate": 0,
        "repetition": rep,
        "status": "ok",
        "error": None,
        "measured_s": measured_s,
    }
    if workload == "stream":
        gbps = true_throughput_gbps(size, shapes.get(impl, "same")) * noise
        byte_count = int(gbps * 1e9 * measured_s / 8)
        messages = byte_count // size
    else:
        latency = (20 + size / 1e3) * (1 + 0.3 * (threads - 1)) * _RR_FACTOR.get(impl, 1.0) * noise
        messages = int(threads * measured_s * 1e6 / latency)
        byte_count = messages * size
        row.update(
            latency_mean_us=latency,
            latency_p50_us=0.95 * latency,
            latency_p99_us=2.5 * latency,
            latency_max_us=6 * latency,
        )
    row.update(bytes=byte_count, messages=messages, throughput_gbps=byte_count * 8 / measured_s / 1e9)
    zero_copy = registry.uses_zero_copy(impl)
    per_message_ns = 900 if zero_copy else 300
    for side, share in (("snd", 0.6), ("rcv", 0.4)):
        cpu_s = share * (byte_count * _CPU_NS_PER_BYTE.get(impl, 0.5) + messages * per_message_ns) / 1e9
        cpu_s = min(cpu_s, measured_s * threads) * rng.normal(1.0, noise_cv)
        ctx = int(messages / 50) + int(rng.integers(0, 20))
        row.update(
            {
                f"{side}_cpu_user_s": 0.2 * cpu_s,
                f"{side}_cpu_sys_s": 0.8 * cpu_s,
                f"{side}_ctx_voluntary": ctx,
                f"{side}_ctx_involuntary": int(rng.integers(0, 10)),
                f"{side}_task_clock_ms": cpu_s * 1e3,
                f"{side}_context_switches": ctx,
                f"{side}_cpu_migrations": 0 if pinning == "same_cpu" else int(rng.integers(0, 50)),
            }
        )
        if hardware_counters:
            cycles = cpu_s * 2.5e9
            lines = byte_count / 64
            row.update(
                {
                    f"{side}_cycles": cycles,
                    f"{side}_instructions": 1.5 * cycles,
                    f"{side}_cache_references": 2 * lines,
                    f"{side}_cache_misses": 0.1 * lines,
                    f"{side}_l1d_load_misses": (1.5 if impl == "two_copy" else 1.0) * lines * rng.normal(1.0, noise_cv),
                    f"{side}_llc_load_misses": 0.05 * lines * rng.normal(1.0, noise_cv),
                }
            )
    if not hardware_counters:
        row["perf_missing"] = "; ".join(
            f"{side}_{schema.PERF_EVENTS[event]}: <not supported>" for side in SIDES for event in HARDWARE_EVENTS
        )
    row["retransmits"] = 0 if pinning == "same_cpu" else int(rng.poisson(500))
    if zero_copy:
        # as measured over veth: every completion flagged copied, notifications coalesced
        notifications = max(messages // 20, 1)
        row.update(
            zc_sends=messages, zc_completed=messages, zc_copied=messages, zc_notifications=notifications, zc_enobufs=0
        )
    row["trial_wall_s"] = measured_s + 1.3
    return row


def _fail(df: pd.DataFrame, rows: np.ndarray) -> None:
    measured = [c.name for c in schema.COLUMNS if not c.required and c.name not in ("error", "perf_missing")]
    df.loc[rows, measured] = np.nan
    df.loc[rows, "status"] = "failed"
    df.loc[rows, "error"] = "synthetic failure"


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """All schema columns in schema order, ints as nullable Int64 so the CSV shows no '.0'."""
    out = pd.DataFrame(index=df.index)
    for column in schema.COLUMNS:
        values = df[column.name] if column.name in df else pd.Series(np.nan, index=df.index)
        if column.kind == "int":
            out[column.name] = pd.to_numeric(values).astype("Int64")
        elif column.kind == "float":
            out[column.name] = pd.to_numeric(values).astype("float64")
        else:
            out[column.name] = values.astype(object).where(values.notna(), None)
    return out


def _manifest(df: pd.DataFrame, sha256: str) -> dict[str, Any]:
    def values(column: str, workload: str | None = None) -> list[Any]:
        rows = df if workload is None else df[df["workload"] == workload]
        return sorted(int(v) for v in rows[column].unique())

    implementations = registry.ordered(df["implementation"])
    hardware = bool(df["snd_cycles"].notna().any())
    experiment = str(df["experiment"].iloc[0])
    servers = (
        {"connections": values("connections"), "idle_connections": values("idle_connections")}
        if experiment == "servers"
        else {}
    )
    return {
        "sweep": str(df["sweep"].iloc[0]),
        "profile": "custom",
        "host": {
            "hostname": "synthhost",
            "kernel": "6.0.0-synthetic",
            "cpu_model": "Synthetic CPU @ 2.5GHz",
            "cores": 2,
            "memory_gib": 4.0,
            "virtualization": "kvm",
        },
        "toolchain": {
            "gcc": "12.2.0",
            "perf": "6.0",
            "iperf3": "3.12" if "iperf3" in implementations else None,
            "python": "3.11",
            "packages": {},
        },
        "git": {"commit": "0" * 40, "dirty": False},
        "parameters": {
            "experiment": experiment,
            **servers,
            "implementations": implementations,
            "workloads": [w for w in schema.WORKLOADS if w in set(df["workload"])],
            "sizes": values("size_bytes", "stream") or ([] if servers else values("size_bytes")),
            "threads": values("threads"),
            "trials": int(df["repetition"].max()),
            "duration_s": _DURATION_S,
            "warmup_s": 0.5,
            "pinning": [p for p in schema.PINNINGS if p in set(df["pinning"])],
            "receive": [r for r in schema.RECEIVE_MODES if r in set(df["receive"])],
            "seed": 0,
            "rr_sizes": values("size_bytes", "rr"),
            "mtu": 1500,
            "optmem_max": 131072,
            "verify": False,
        },
        "perf": {
            "available": True,
            "supported_events": [e for e in schema.PERF_EVENTS if hardware or e not in HARDWARE_EVENTS],
            "unsupported_events": {} if hardware else {e: "<not supported>" for e in HARDWARE_EVENTS},
        },
        "schema_version": schema.SCHEMA_VERSION,
        "started_at": "2025-01-01T00:00:00Z",
        "ended_at": "2025-01-01T01:00:00Z",
        "complete": True,
        "trials_sha256": sha256,
    }


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_trials(path: str | Path) -> pd.DataFrame:
    """The trials file at PATH as copylab's store reads it."""
    return SweepStore(Path(path).parent).read_trials()


def load_sweep(directory: str | Path) -> tuple[pd.DataFrame, Manifest]:
    """The trials and manifest of DIRECTORY as copylab's store loads and checks them."""
    return SweepStore(directory).load()


# Curves of per-block log ratios with a known truth, for the simulation of verdicts (tests/error_rates.py).
def crossing_log_ratio(size: float, at: float = 16384.0, effect: float = 0.05, width: float = 1.5) -> float:
    """The true log ratio of a challenger EFFECT worse far below AT and EFFECT better far above it, changing smoothly
    over about WIDTH doublings either side (a tanh in log2 size): it crosses 0 exactly at AT."""
    return float(np.log1p(effect * np.tanh((np.log2(size) - np.log2(at)) / width)))


def block_log_ratios(truth: float, spread: float, blocks: int, rng: np.random.Generator) -> np.ndarray:
    """BLOCKS blocks' log ratios of a challenger to its baseline at one point: TRUTH plus a normal block-to-block
    SPREAD (the standard deviation of the log ratio across blocks, as measured on the hosts)."""
    values: np.ndarray = truth + rng.normal(0.0, spread, blocks)
    return values
