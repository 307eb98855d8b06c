"""How fast the host runs a trial's CPUs, probed just before and after the trial.

On a shared virtual machine a vCPU can run at half speed for seconds while the host gives its physical
core to someone else; nothing inside the guest shows it (the thread is on its CPU all along, no time is
stolen). The same fixed work, timed on the trial's CPUs around the trial, says at which speed it ran:
the covariate the analysis uses to explain, and the report to show, the spread between identical trials.
"""

from __future__ import annotations

import math

from copylab.declarations import contract
from copylab.measure.running.spec import TrialSettings, TrialSpec, cpus_for
from copylab.programs.build import SPEED_PROBE
from copylab.testbeds.testbed import End

# What a probe measures: the probe's JSON key -> the column suffix.
MEASURES = {"ns_per_iteration": "ns", "copy_ns_per_byte": "copy_ns"}


def probe(end: End, cpu: str | None) -> dict[str, float]:
    """The probe's measures on CPU of END (NaN where it cannot run there: the trial goes on without them)."""
    command = [end.program(SPEED_PROBE)]
    result = end.run(["taskset", "-c", cpu, *command] if cpu is not None else command)
    try:
        parsed = contract.parse("speed_probe", result.stdout) if result.returncode == 0 else {}
    except contract.ContractError:
        parsed = {}
    return {key: float(parsed.get(key, math.nan)) for key in MEASURES}


def trial_speed(spec: TrialSpec, settings: TrialSettings, when: str) -> dict[str, float]:
    """The probe's columns for WHEN (before, after): its mean over the trial's CPUs, the server's, and the
    client's when it is another CPU or host."""
    server_cpu, client_cpu = cpus_for(spec.pinning)
    bed = settings.testbed
    probes = [probe(bed.server, server_cpu)]
    if client_cpu != server_cpu or bed.path == "network":
        probes.append(probe(bed.client, client_cpu))
    return {f"probe_{when}_{suffix}": sum(p[key] for p in probes) / len(probes) for key, suffix in MEASURES.items()}
