"""Per-trial metrics derived from trials.csv, and the registry saying which way each one is better.

Which metrics describe an experiment's trials, and which one it shows first, its declaration says
(copylab.vocabulary.experiment: metrics, headline)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

from copylab.vocabulary.experiment import Experiment

# Which way is better; None: a description of the trial (how busy a side was), never compared.
Direction = Literal["higher", "lower"] | None


class Metric(NamedTuple):
    direction: Direction
    unit: str
    label: str


METRICS: dict[str, Metric] = {
    "throughput_gbps": Metric("higher", "Gbit/s", "throughput"),
    "requests_per_s": Metric("higher", "requests/s", "requests per second"),
    "latency_mean_us": Metric("lower", "µs", "mean round-trip latency"),
    "latency_p99_us": Metric("lower", "µs", "99th percentile round-trip latency"),
    "latency_p999_us": Metric("lower", "µs", "99.9th percentile round-trip latency"),
    "cpu_ns_per_byte": Metric("lower", "ns/B", "CPU time per byte, sender + receiver (user + sys)"),
    "snd_cpu_ns_per_byte": Metric("lower", "ns/B", "sender CPU time per byte (user + sys)"),
    "snd_user_ns_per_byte": Metric("lower", "ns/B", "sender user-space CPU time per byte (where packing copies run)"),
    "rcv_cpu_ns_per_byte": Metric("lower", "ns/B", "receiver CPU time per byte (user + sys)"),
    "cycles_per_byte": Metric("lower", "cycles/B", "CPU cycles per byte, sender + receiver"),
    "snd_l1d_misses_per_kib": Metric("lower", "misses/KiB", "sender L1d load misses per KiB"),
    "snd_llc_misses_per_kib": Metric("lower", "misses/KiB", "sender LLC load misses per KiB"),
    "ctx_switches_per_msg": Metric("lower", "switches/message", "context switches per message, both sides"),
    "zc_copied_fraction": Metric("lower", "fraction", "zero-copy sends the kernel copied anyway"),
    "retransmits": Metric("lower", "count/trial", "TCP retransmits per trial"),
    "rcv_bytes_per_call": Metric(None, "B/call", "bytes the receiver took per receive call"),
    "probe_ns": Metric(None, "ns", "the host's CPU speed probe around the trial (higher is slower)"),
    "probe_copy_ns": Metric(None, "ns/B", "the host's copy speed probe around the trial (higher is slower)"),
    "rcv_wakeups_per_mb": Metric(None, "switches/MB", "receiver's voluntary context switches (wake-ups) per MB"),
    "rcv_kernel_copies_per_byte": Metric(
        None, "B/B", "bytes the kernel copied to the receiver's user space per byte delivered (BPF)"
    ),
    "snd_kernel_copies_per_byte": Metric(None, "B/B", "bytes the kernel copied from the sender per byte (BPF)"),
    "snd_segments_per_skb": Metric(None, "segments/skb", "TCP segments per skb the sender transmitted (BPF)"),
    "snd_frags_per_skb": Metric(None, "fragments/skb", "page fragments per skb the sender transmitted (BPF)"),
    "snd_cpu_us_per_request": Metric("lower", "µs/request", "server CPU time per request (user + sys)"),
    "rcv_cpu_us_per_request": Metric("lower", "µs/request", "client CPU time per request (user + sys)"),
    "snd_ctx_per_request": Metric("lower", "switches/request", "server context switches per request"),
    "snd_busy": Metric(None, "fraction", "share of the window the server was on a CPU"),
    "rcv_busy": Metric(None, "fraction", "share of the window the client was on a CPU"),
    "served_fraction": Metric("higher", "fraction", "connections served at least once in the window"),
    "fairness": Metric("higher", "Jain's index", "fairness over connections (Jain's index)"),
}


def metrics_for(declared: Iterable[Experiment]) -> list[str]:
    """The metrics of the experiments DECLARED, in METRICS order."""
    wanted = {metric for experiment in declared for metric in experiment.metrics}
    return [name for name in METRICS if name in wanted]


def add_metrics(trials: pd.DataFrame) -> pd.DataFrame:
    """Return a copy of TRIALS with one float column per METRICS entry.

    A metric is NaN wherever an input is unmeasured or a denominator is zero
    (never 0 and never inf): hardware counters missing on a host leave
    cycles_per_byte and the miss rates NaN, non-zero-copy rows leave
    zc_copied_fraction NaN, failed trials leave everything NaN.
    """
    out = trials.copy()
    byte_count = _positive(trials["bytes"])
    cpu = {side: trials[f"{side}_cpu_user_s"] + trials[f"{side}_cpu_sys_s"] for side in ("snd", "rcv")}
    out["cpu_ns_per_byte"] = (cpu["snd"] + cpu["rcv"]) * 1e9 / byte_count
    out["snd_cpu_ns_per_byte"] = cpu["snd"] * 1e9 / byte_count
    out["rcv_cpu_ns_per_byte"] = cpu["rcv"] * 1e9 / byte_count
    out["snd_user_ns_per_byte"] = trials["snd_cpu_user_s"] * 1e9 / byte_count
    out["cycles_per_byte"] = (trials["snd_cycles"] + trials["rcv_cycles"]) / byte_count
    kib = byte_count / 1024
    out["snd_l1d_misses_per_kib"] = trials["snd_l1d_load_misses"] / kib
    out["snd_llc_misses_per_kib"] = trials["snd_llc_load_misses"] / kib
    # getrusage counts, not perf's: they are filled on every host and cover the same window.
    switches = sum(trials[f"{side}_ctx_{kind}"] for side in ("snd", "rcv") for kind in ("voluntary", "involuntary"))
    out["ctx_switches_per_msg"] = switches / _positive(trials["messages"])
    out["zc_copied_fraction"] = trials["zc_copied"] / _positive(trials["zc_completed"])
    out["rcv_bytes_per_call"] = trials["bytes"] / _positive(trials["rcv_receive_calls"])
    out["probe_ns"] = trials[["probe_before_ns", "probe_after_ns"]].mean(axis=1, skipna=False)
    out["probe_copy_ns"] = trials[["probe_before_copy_ns", "probe_after_copy_ns"]].mean(axis=1, skipna=False)
    out["rcv_wakeups_per_mb"] = trials["rcv_ctx_voluntary"] / (byte_count / 1e6)
    out["rcv_kernel_copies_per_byte"] = trials["rcv_kernel_copy_bytes"] / byte_count
    out["snd_kernel_copies_per_byte"] = trials["snd_kernel_copy_bytes"] / byte_count
    skbs = _positive(trials["snd_skbs"])
    out["snd_segments_per_skb"] = trials["snd_skb_segments"] / skbs
    out["snd_frags_per_skb"] = trials["snd_skb_frags"] / skbs
    requests = _positive(trials["messages"])
    out["snd_cpu_us_per_request"] = cpu["snd"] * 1e6 / requests
    out["rcv_cpu_us_per_request"] = cpu["rcv"] * 1e6 / requests
    out["snd_ctx_per_request"] = (trials["snd_ctx_voluntary"] + trials["snd_ctx_involuntary"]) / requests
    window = _positive(trials["measured_s"])
    out["snd_busy"] = cpu["snd"] / window
    out["rcv_busy"] = cpu["rcv"] / window
    out["served_fraction"] = trials["connections_served"] / _positive(trials["connections"])
    for name in METRICS:
        out[name] = out[name].astype("float64")
    return out


def _positive(values: pd.Series) -> pd.Series:
    """VALUES as float with zeros turned into NaN, so that ratios over them are NaN rather than inf."""
    values = values.astype("float64")
    return values.where(values > 0, np.nan)
