"""Provenance of a sweep: host, toolchain, code version, parameters and a checksum of the data."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from copylab.paths import ROOT
from copylab.perf import PerfSupport

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


def host() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "virtualization": _virtualization(),
    }


def toolchain(perf: PerfSupport) -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "gcc": _first_line(["gcc", "--version"]),
        "perf": perf.version,
        "iperf3": _first_line(["iperf3", "--version"]),
        "python": sys.version.split()[0],
        "packages": packages,
    }


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    return {"commit": commit, "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def create(sweep: str, profile: str, parameters: dict[str, Any], perf: PerfSupport) -> dict[str, Any]:
    return {
        "sweep": sweep,
        "profile": profile,
        "host": host(),
        "toolchain": toolchain(perf),
        "git": git_state(),
        "parameters": parameters,
        "perf": {
            "available": perf.available,
            "supported_events": list(perf.supported),
            "unsupported_events": dict(perf.unsupported),
        },
        "started_at": now_iso(),
        "ended_at": None,
        "complete": False,
        "trials_sha256": None,
    }


def write(path: Path, manifest: dict[str, Any]) -> None:
    """Replaces the manifest atomically, so an interruption never leaves half a file."""
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(temporary, path)


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
