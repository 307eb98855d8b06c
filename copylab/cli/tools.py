"""The commands around a study: compiling the programs, making and removing the namespaces, calibrating the copy
cost, the bench, serving the explorer and cleaning up.  The study's own commands (a sweep, its analysis, the report,
a comparison, the hand-in, the tests) and the table of every command are in commands.py.
"""

from __future__ import annotations

import secrets
import shutil
from typing import Any

from copylab.cli.parsing import parse_number, parse_port
from copylab.paths import DATA, REFERENCE_DATA, REPORT, ROOT


def build(sanitize: str | None = None) -> int:
    """Compile the C programs (gcc -O2 -Wall -Wextra -Werror) into build/bin."""
    from copylab.programs.build import build as run_build

    print(f"built {run_build(sanitize) / 'bin'}")
    return 0


def _pair(server: str, client: str, mtu: Any, optmem_max: Any) -> Any:
    from copylab.declarations.namespace_pair import NamespacePair

    return NamespacePair(
        server, client, mtu=parse_number("mtu", mtu, int), optmem_max=parse_number("optmem-max", optmem_max, int)
    )


def netns_up(
    server: str = "copylab_srv", client: str = "copylab_cli", mtu: int = 1500, optmem_max: int = 131072
) -> int:
    """Create the two namespaces and their veth link (root)."""
    from copylab.testbeds import netns

    netns.up(_pair(server, client, mtu, optmem_max))
    for entry in netns.status():
        print(entry)
    return 0


def netns_down() -> int:
    """Remove every namespace copylab created (root); others are never touched. Put back the host's sender pages
    (--sender-pages) if a killed sweep left them changed."""
    from copylab.testbeds import netns, sender_pages

    netns.require_root("netns-down")
    removed = netns.down()
    print(f"removed: {', '.join(removed) if removed else 'nothing'}")
    restored = sender_pages.restore_left()
    if restored:
        print(f"restored {restored}, which a killed sweep had changed")
    return 0


def netns_status() -> int:
    """Show copylab's namespaces, addresses and link state."""
    from copylab.testbeds import netns

    entries = netns.status()
    for entry in entries:
        print("  ".join(f"{key}={value}" for key, value in entry.items()))
    if not entries:
        print("no copylab namespaces")
    return 0


def lab(port: int = 8888, data: str = str(REFERENCE_DATA)) -> int:
    """Open the explorer notebook in JupyterLab on localhost; prints the URL that opens it once the server answers."""
    from copylab.explore import serve

    port, sweep = parse_port(port), serve.check_sweep(data)
    # A token of our own, so the printed URL can open the explorer notebook itself, not the launcher.
    token = secrets.token_hex(24)
    notebook = serve.NOTEBOOK.relative_to(ROOT).as_posix()
    url = serve.lab_url(port, token, notebook)
    return serve.serve(serve.lab_command(port, token, ROOT), serve.environment(sweep), ROOT, port, url)


def explore(port: int = 8866, data: str = str(REFERENCE_DATA)) -> int:
    """Serve the explorer as an app (Voilà: its widgets and plots, no code) on localhost; prints its URL once the
    server answers."""
    from copylab.explore import serve

    port, sweep = parse_port(port), serve.check_sweep(data)
    token = secrets.token_hex(24)
    url = serve.voila_url(port, token)
    return serve.serve(serve.voila_command(port, token), serve.environment(sweep), serve.NOTEBOOK.parent, port, url)


def calibrate(data: str | None = None) -> int:
    """Measure single-core memcpy bandwidth (the copy-bound ceiling), the copy cost per byte by cache level and
    what the copy paths found."""
    import dataclasses

    from copylab.calibration.measurement import calibration
    from copylab.calibration.record import copy_cost_table
    from copylab.programs.build import build as run_build
    from copylab.record.store import SweepStore

    store = SweepStore(data) if data else None
    record = store.read_manifest() if store else None  # a bad --data fails before anything is measured
    run_build()
    result = calibration()
    print(f"memcpy: {result.memcpy_gbps:.1f} Gbit/s on CPU {result.cpu} ({result.buffer_mib} MiB buffer)")
    caches = ", ".join(f"{level.name} {level.size_bytes >> 10} KiB" for level in result.caches) or "not in sysfs"
    print(
        f"caches of CPU 0: {caches}\ncopy cost per byte (memcpy as linked, median over rounds, hot buffers, "
        f"at the cheaper placement):\n{copy_cost_table(result)}"
    )
    if store and record:
        store.write_manifest(dataclasses.replace(record, calibration=result))
        print(f"stored in {store.manifest_path}")
    return 0


def bench(pairs: int = 5, duration: float = 2.0, rows: int = 100000, smoke: bool = False) -> int:
    """Compare with iperf3 on the same link, time the harness and analysis, show the copy limit (root)."""
    from copylab.bench.figure import table
    from copylab.bench.goals import run_bench
    from copylab.cli.measuring import record_bench
    from copylab.measure.host.provenance import host, now_iso
    from copylab.programs.build import build as run_build

    run_build()
    figures = run_bench(
        parse_number("pairs", pairs, int),
        parse_number("duration", duration, float),
        parse_number("rows", rows, int),
        bool(smoke),
    )
    machine = host()
    print(f"copylab bench, {now_iso()}, {machine.cpu_model}, {machine.cores} cores, kernel {machine.kernel}")
    print(table(figures))
    record_bench(figures, smoke)
    return 1 if any(figure.passed is False for figure in figures) else 0


def clean() -> int:
    """Remove the builds (build/), the figures (figures/) and the reports (report/); data/ is never touched."""
    for path in (ROOT / "build", ROOT / "figures", REPORT):
        for child in path.glob("*") if path != ROOT / "build" else [path]:
            if child.name != ".gitkeep":
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    print(f"cleaned build/, figures/ and report/; {DATA} untouched")
    return 0
