"""The report's Setup appendix: the provenance line, the host and toolchain table and the sweep's settings, from
its manifest."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from copylab.declarations.sweep_config import SweepConfig
from copylab.formatting import code, fmt_num, fmt_size, markdown_table, md_escape
from copylab.record.manifest import Manifest
from copylab.report.results import (
    Results,
)
from copylab.report.sections import transport_prose

# What --sender-pages set on the host for the sweep (copylab.testbeds.sender_pages).
SENDER_PAGES = {
    "large": "multi-page (32 KiB) buffers, the kernel's default",
    "small": "small (4 KiB): net.core.high_order_alloc_disable=1 for the sweep",
}


def sizes_text(sizes: Sequence[int]) -> str:
    return ", ".join(fmt_size(s) for s in sizes) if sizes else "none"


def _when(iso: str) -> str:
    return iso.replace("T", " ")[:16] + " UTC"


def _period(manifest: Manifest) -> str:
    started, ended = manifest.started_at, manifest.ended_at
    if not started:
        return "at an unrecorded time"
    return f"from {_when(started)} to {_when(ended)}" if ended else f"from {_when(started)} (not finished)"


def front_matter(results: Results, generated: date) -> str:
    """Provenance line, host and toolchain table and sweep settings table, from the manifest."""
    m = results.manifest
    host, tools, params = m.host, m.toolchain, m.parameters
    lines = [
        f"Sweep {code(results.name)} (profile {md_escape(m.profile)}), measured {_period(m)}, code at commit "
        f"{code(m.git.commit[:12])}"
        + (" with uncommitted changes" if m.git.dirty else "")
        + f". Report generated on {generated.isoformat()}.",
        "",
        "## Host and toolchain",
        "",
    ]
    programs = dict(tools.programs)
    rows = [
        ("Host", host.hostname),
        ("Kernel", host.kernel),
        ("CPU", host.cpu_model),
        ("Cores", host.cores),
        ("Memory", f"{fmt_num(host.memory_gib)} GiB"),
        ("Virtualisation", host.virtualization),
        ("C compiler", programs.pop("gcc", None)),
        ("perf", programs.pop("perf", None) or "not installed"),
        *((name, version or "not installed") for name, version in programs.items()),
        ("Python", tools.python),
        ("Python packages", ", ".join(f"{k} {v}" for k, v in tools.packages.items() if v) or None),
    ]
    if m.path == "network":
        rows[0] = ("Controller (ran copylab)", host.hostname)
        rows[1:1] = _ends_rows(m)
    origin = results.origin
    rows.append(("trials.csv sha256", origin.grouped_sha256()))
    if origin.modified:
        rows.append(("Modified", f"yes: the manifest recorded sha256 {origin.recorded_sha256} when the sweep ended"))
    lines.append(markdown_table({"Item": k, "Value": md_escape(v)} for k, v in rows if v is not None))
    calibration = m.calibration.memcpy_gbps if m.calibration else None
    settings = [
        ("Implementations", ", ".join(params.implementations)),
        ("Workloads", ", ".join(params.workloads)),
        ("Stream message sizes", sizes_text(params.sizes)),
        ("Request/response sizes", sizes_text(params.rr_sizes)),
        ("Threads (= connections)", ", ".join(str(t) for t in params.threads)),
        ("Trials per configuration", params.trials),
        ("Measured window", f"{fmt_num(params.duration_s)} s"),
        ("Warm-up before the window", f"{fmt_num(params.warmup_s)} s"),
        ("CPU pinning", ", ".join(params.pinning)),
        ("Trial order seed", params.seed),
        ("Path", "network: two hosts over SSH" if m.path == "network" else "veth: two namespaces of one host"),
        *(
            (("Privilege", "none: the namespaces ran inside a user namespace copylab created (no root)"),)
            if m.privilege == "user-namespace"
            else ()
        ),
        *(
            (("veth MTU", f"{params.mtu} B"), ("net.core.optmem_max", f"{params.optmem_max:,} B"))
            if m.path == "veth" or params.tune_remote
            else (("MTU and net.core.optmem_max", "the hosts' own (not changed: no --tune-remote)"),)
        ),
        ("Sender pages", None if m.path == "network" else SENDER_PAGES[params.sender_pages]),
        ("TCP congestion control", transport_prose.congestion_setting(m)),
        ("Socket buffers", transport_prose.socket_buffer_setting(m)),
        ("Payload verification", _verification(params)),
        ("Single-core memcpy (calibration)", f"{fmt_num(calibration)} Gbit/s" if calibration else None),
    ]
    table = markdown_table({"Setting": k, "Value": v} for k, v in settings if v is not None)
    lines += ["", "## Sweep settings", "", table]
    return "\n".join(lines)


def _verification(params: SweepConfig) -> str:
    """What the sweep's receivers checked: with --verify, every byte they received, in each receive mode; on the
    sink nothing arrives, so nothing was checked whatever the manifest says."""
    if params.path == "sink":
        return "none: nothing arrives on the sink (no receiver runs there)"
    if not params.verify:
        return "off"
    modes = " and ".join(params.receive) + (" receives" if len(params.receive) > 1 else " receive")
    return f"on: every byte received checked against its pattern ({modes})"


def _ends_rows(m: Manifest) -> list[tuple[str, str]]:
    """Each host of a two-host sweep and the link that carried its traffic."""
    rows = []
    for end in m.ends:
        host = end.host
        rows.append(
            (
                f"{end.role.capitalize()} host",
                f"{end.target}: {host.hostname}, Linux {host.kernel}, {host.cpu_model}, {host.cores} cores, "
                f"{fmt_num(host.memory_gib)} GiB, {host.virtualization}",
            )
        )
        link = end.link
        if link is not None:
            offloads = ", ".join(f"{name} {state}" for name, state in link.offloads.items()) or "not reported"
            rows.append(
                (
                    f"{end.role.capitalize()} link",
                    f"{link.interface} (driver {link.driver or 'unknown'}), MTU {link.mtu or 'unknown'}; "
                    f"offloads: {offloads}",
                )
            )
        if end.tuned:
            rows.append(
                (f"{end.role.capitalize()} tuned for the sweep", ", ".join(f"{k}={v}" for k, v in end.tuned.items()))
            )
    return rows
