"""The host's own floor for a round trip: what a minimal ping-pong costs on this testbed, so that the host's wake-up
cost is not read as a model's.

On these VMs a round trip between CPUs costs far more than on one CPU (a wake-up across vCPUs goes through the
hypervisor), whatever the server does.  A sweep of an experiment whose registry names a floor implementation (the
iterative server: one connection, a blocking receive and send) measures it once, before its trials, at one
connection and at each pinning with both ends placed (same_cpu, split_cpu): the mean round trip of one trial of
the sweep's window, recorded in the manifest.  A pinning whose floor trial fails gets no value (and no made-up one).
"""

from __future__ import annotations

import dataclasses
import math

from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import run_trial
from copylab.vocabulary.experiment import Experiment
from copylab.vocabulary.values import FLOOR_PINNINGS


def host_floor(experiment: Experiment, size: int, settings: TrialSettings) -> dict[str, float]:
    """pinning -> mean round trip (µs) of EXPERIMENT's floor implementation at one connection and SIZE-byte
    responses, one trial each with SETTINGS (no perf, no kernel copy counts); {} without a floor implementation."""
    floor = next((implementation for implementation in experiment.implementations if implementation.floor), None)
    if floor is None:
        return {}
    quiet = dataclasses.replace(settings, kernel_copies=None, perf=dataclasses.replace(settings.perf, available=False))
    found = {}
    for pinning in FLOOR_PINNINGS:
        spec = TrialSpec(f"floor-{pinning}", 0, floor, "rr", size, 1, pinning, 1, connections=1)
        row = run_trial(spec, quiet)
        latency = row.get("latency_mean_us")
        if row["status"] == "ok" and latency is not None and math.isfinite(latency):
            found[pinning] = float(latency)
    return found
