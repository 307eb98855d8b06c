"""The zero-copy senders' bytes in flight, chosen from the path, measured once at a sweep's start.

A MSG_ZEROCOPY sender may rewrite a buffer only once the kernel is done with it, which on a network path is when
its bytes are acknowledged: the ring must hold what the path holds in flight, its bandwidth-delay product, or the
ring, not the path, bounds the throughput.  A sweep with a zero-copy sender and no --zc-inflight runs one stream
trial of the experiment's shared baseline (64 KiB messages, one connection, the sweep's window) and takes its
throughput times its connection's smoothed round-trip time (TCP_INFO) as the product.  The ring gets twice that,
as the product grows with the congestion window, and at least the floor measured over veth (FLOOR_BYTES: a
longer ring there moved less, see copylab.declarations.settings).  The manifest records the trial's numbers and the
choice;
a failed trial leaves the floor, with its reason.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from copylab.declarations import implementations
from copylab.declarations.settings import get as setting
from copylab.declarations.settings import is_number
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import run_trial
from copylab.record.manifest import InFlight
from copylab.vocabulary.experiment import Experiment
from copylab.vocabulary.limits import DEFAULT_ZC_INFLIGHT as FLOOR_BYTES

MEASURED_SIZE = 64 << 10
PAGE = 4096


def choose(throughput_gbps: float, srtt_us: float) -> int:
    """Bytes in flight for a path of this throughput and round trip: twice its product, at least the floor, whole
    pages, within the setting's limit."""
    product = throughput_gbps * 1e9 / 8 * srtt_us * 1e-6
    wanted = max(FLOOR_BYTES, math.ceil(2 * product / PAGE) * PAGE)
    return int(min(wanted, setting("zc_inflight").high or wanted))


def measure(experiment: Experiment, settings: TrialSettings) -> InFlight:
    """One stream trial of EXPERIMENT's shared baseline with SETTINGS (no perf, no kernel copy counts)."""
    shared = implementations.baseline_of(experiment)
    baseline = shared.name
    quiet = dataclasses.replace(settings, kernel_copies=None, perf=dataclasses.replace(settings.perf, available=False))
    spec = TrialSpec("in-flight", 0, shared, "stream", MEASURED_SIZE, 1, "none", 1)
    row = run_trial(spec, quiet)
    throughput: Any = row.get("throughput_gbps")
    srtt: Any = row.get("srtt_us")
    if row["status"] != "ok" or not all(is_number(v) and v > 0 for v in (throughput, srtt)):
        why = row.get("error") or "the trial reported no throughput or round trip"
        return InFlight(FLOOR_BYTES, None, None, None, f"the floor: the measuring trial of {baseline} failed ({why})")
    throughput, srtt = float(throughput), float(srtt)
    product = round(throughput * 1e9 / 8 * srtt * 1e-6)
    chosen = choose(throughput, srtt)
    how = "twice the path's bandwidth-delay product" if chosen > FLOOR_BYTES else "the floor, above twice the product"
    return InFlight(chosen, throughput, srtt, product, f"{how} ({baseline}, 64 KiB, one connection)")
