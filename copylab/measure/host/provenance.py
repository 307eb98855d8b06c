"""What a sweep's manifest records about where and with what it ran, probed on this host: the hardware and
kernel, the toolchain's versions, the code's commit, the clock; create() assembles the manifest
(copylab.record.manifest,
the record) of a sweep about to start."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from copylab.declarations import implementations
from copylab.declarations.sweep_config import SweepConfig
from copylab.programs.perf import PerfSupport
from copylab.record.manifest import EndRecord, Host, Manifest, PerfRecord, Toolchain
from copylab.record.origin import git_state
from copylab.testbeds import congestion

PACKAGES = ("numpy", "pandas", "scipy", "seaborn", "matplotlib", "papermill", "nbconvert", "ipywidgets", "invoke")


def _first_line(command: list[str]) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    result = subprocess.run(command, capture_output=True, text=True)
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if lines else None


def _cpu_model() -> str:
    text = Path("/proc/cpuinfo").read_text()
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def _memory_gib() -> float:
    text = Path("/proc/meminfo").read_text()
    match = re.search(r"^MemTotal:\s*(\d+) kB", text, re.MULTILINE)
    return round(int(match.group(1)) / 2**20, 1) if match else float("nan")


def _virtualization() -> str:
    detected = _first_line(["systemd-detect-virt"])
    if detected:
        return detected
    flags = Path("/proc/cpuinfo").read_text()
    return "unknown hypervisor" if re.search(r"\bhypervisor\b", flags) else "none detected"


def _congestion_default() -> str | None:
    try:
        return Path(congestion.DEFAULT).read_text().strip() or None
    except OSError:
        return None


def host() -> Host:
    return Host(
        hostname=platform.node(),
        kernel=platform.release(),
        cpu_model=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_gib=_memory_gib(),
        virtualization=_virtualization(),
        congestion_default=_congestion_default(),
    )


def toolchain(perf: PerfSupport) -> Toolchain:
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    programs = {"gcc": _first_line(["gcc", "--version"]), "perf": perf.version}
    for implementation in implementations.registry().values():
        command = list(implementation.driver.version_command)
        if command:
            programs[command[0]] = _first_line(command)
    return Toolchain(python=sys.version.split()[0], packages=packages, programs=programs)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def create(
    config: SweepConfig,
    perf: PerfSupport,
    schema_version: int,
    placement: tuple[str, list[EndRecord]] = ("veth", []),
    privilege: str = "root",
) -> Manifest:
    """The manifest of a sweep about to start; PLACEMENT: its path and, between hosts, its two ends."""
    path, ends = placement
    return Manifest(
        sweep=config.name,
        profile=config.profile,
        host=host(),
        toolchain=toolchain(perf),
        git=git_state(),
        parameters=config,
        perf=PerfRecord(perf.available, list(perf.supported), dict(perf.unsupported)),
        started_at=now_iso(),
        schema_version=schema_version,
        path=path,
        ends=ends,
        privilege=privilege,
    )
