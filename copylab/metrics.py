"""Per-trial metrics derived from trials.csv, and the registry saying which way each one is better."""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

Direction = Literal["higher", "lower"]


class Metric(NamedTuple):
    direction: Direction
    unit: str
    label: str


METRICS: dict[str, Metric] = {
    "throughput_gbps": Metric("higher", "Gbit/s", "throughput"),
    "latency_mean_us": Metric("lower", "µs", "mean round-trip latency"),
    "latency_p99_us": Metric("lower", "µs", "99th percentile round-trip latency"),
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
}


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
    for name in METRICS:
        out[name] = out[name].astype("float64")
    return out


def _positive(values: pd.Series) -> pd.Series:
    """VALUES as float with zeros turned into NaN, so that ratios over them are NaN rather than inf."""
    values = values.astype("float64")
    return values.where(values > 0, np.nan)
