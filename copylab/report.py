"""The PDF report: the Markdown of its data-driven sections, and rendering the report notebook to PDF."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import nbformat
from nbconvert import PDFExporter
from nbconvert.exporters.pdf import LatexFailed

from copylab.analysis import analyze
from copylab.answers import (
    RESULT_FILES,
    Sweep,
    answer_crossover,
    limitations,
    zero_copy_counts,
)
from copylab.calibrate import copy_limit_rows
from copylab.captions import caption
from copylab.diagram import draw_zerocopy_path
from copylab.errors import CopylabError
from copylab.figures import make_figures, save_figures
from copylab.formatting import code, fmt_num, fmt_size, fmt_span, markdown_table, md_escape
from copylab.notebook_runner import execute
from copylab.stats import MIN_TRIALS, UNSTABLE_CV
from copylab.trial import cpus_for

NOTEBOOK = Path("notebooks") / "20_report.ipynb"
DEFAULT_TITLE = "What data movement costs in Linux TCP I/O: two-copy, one-copy and zero-copy sends"
DEFAULT_AUTHOR = "copylab"


# ---------------------------------------------------------------- sections


def _sizes(sizes: Sequence[int]) -> str:
    return ", ".join(fmt_size(s) for s in sizes) if sizes else "none"


def _when(iso: str) -> str:
    return iso.replace("T", " ")[:16] + " UTC"


def _period(manifest: dict) -> str:
    started, ended = manifest.get("started_at"), manifest.get("ended_at")
    if not started:
        return "at an unrecorded time"
    return f"from {_when(started)} to {_when(ended)}" if ended else f"from {_when(started)} (not finished)"


def front_matter(sweep: Sweep, generated: date) -> str:
    """Provenance line, host and toolchain table and sweep settings table, from the manifest."""
    m = sweep.manifest
    host, tools, params, git = m.get("host", {}), m.get("toolchain", {}), m.get("parameters", {}), m.get("git", {})
    commit = str(git.get("commit", "unknown"))
    lines = [
        f"Sweep {code(sweep.name)} (profile {m.get('profile', 'unknown')}), measured {_period(m)}, code at commit "
        f"{code(commit[:12])}"
        + (" with uncommitted changes" if git.get("dirty") else "")
        + f". Report generated on {generated.isoformat()}.",
        "",
        "## Host and toolchain",
        "",
    ]
    rows = [
        ("Host", host.get("hostname")),
        ("Kernel", host.get("kernel")),
        ("CPU", host.get("cpu_model")),
        ("Cores", host.get("cores")),
        ("Memory", f"{fmt_num(host['memory_gib'])} GiB" if host.get("memory_gib") is not None else None),
        ("Virtualisation", host.get("virtualization")),
        ("C compiler", tools.get("gcc")),
        ("perf", tools.get("perf") or "not installed"),
        ("iperf3", tools.get("iperf3") or "not installed"),
        ("Python", tools.get("python")),
        ("Python packages", ", ".join(f"{k} {v}" for k, v in (tools.get("packages") or {}).items() if v) or None),
    ]
    lines.append(markdown_table({"Item": k, "Value": md_escape(v)} for k, v in rows if v is not None))
    calibration = (m.get("calibration") or {}).get("memcpy_gbps")
    settings = [
        ("Implementations", ", ".join(params.get("implementations", []))),
        ("Workloads", ", ".join(params.get("workloads", []))),
        ("Stream message sizes", _sizes(params.get("sizes", []))),
        ("Request/response sizes", _sizes(params.get("rr_sizes") or [])),
        ("Threads (= connections)", ", ".join(str(t) for t in params.get("threads", []))),
        ("Trials per configuration", params.get("trials")),
        ("Measured window", f"{fmt_num(params['duration_s'])} s" if "duration_s" in params else None),
        ("Warm-up before the window", f"{fmt_num(params['warmup_s'])} s" if "warmup_s" in params else None),
        ("Pinning", ", ".join(params.get("pinning", []))),
        ("Trial order seed", params.get("seed")),
        ("veth MTU", f"{params['mtu']} B" if "mtu" in params else None),
        ("net.core.optmem_max", f"{params['optmem_max']:,} B" if "optmem_max" in params else None),
        ("Payload verification", {True: "on", False: "off"}.get(params.get("verify"))),
        ("Single-core memcpy (calibration)", f"{fmt_num(calibration)} Gbit/s" if calibration else None),
    ]
    table = markdown_table({"Setting": k, "Value": v} for k, v in settings if v is not None)
    lines += ["", "## Sweep settings", "", table]
    return "\n".join(lines)


def _pinning_text(pinning: str) -> str:
    server, client = cpus_for(pinning)
    if server is None:
        return f"{code(pinning)}: no affinity, the scheduler places both ends"
    if server == client:
        return f"{code(pinning)}: sender and receiver both on CPU {server} (taskset)"
    return f"{code(pinning)}: sender on CPU {server}, receiver on CPU {client} (taskset)"


def method(sweep: Sweep) -> str:
    """Topology, what one trial is, trial counts, and how intervals and crossovers are computed."""
    params = sweep.manifest.get("parameters", {})
    n = sweep.summary["n"]
    trials = sweep.trials
    pinnings = params.get("pinning") or sorted(set(trials["pinning"]))
    return "\n".join(
        [
            "**Topology.** The server (the variant under test; it sends) and the client (it receives) run in two "
            "network namespaces joined by a veth pair"
            + (f" with an MTU of {params['mtu']} B" if "mtu" in params else "")
            + ", created before the sweep and removed after it. Pinning of both ends: "
            + "; ".join(_pinning_text(p) for p in pinnings)
            + ".",
            "",
            "**One trial.** Every trial starts a fresh server and a fresh client process. The client opens one "
            "connection per thread; the server serves each with its own worker thread. After a warm-up of "
            f"{fmt_num(params.get('warmup_s', float('nan')))} s the client measures a window of "
            f"{fmt_num(params.get('duration_s', float('nan')))} s (CLOCK_MONOTONIC); throughput is the bytes all "
            "client threads received in the window over its measured length. `perf stat` runs on both processes but is "
            "enabled only inside the window, through its control fifo, so start-up, warm-up and teardown are not "
            "counted. CPU time and context switches come from getrusage over the same window.",
            "",
            f"**Repetitions.** {len(trials):,} trials in total ({int((trials['status'] == 'ok').sum()):,} succeeded), "
            f"{params.get('trials', 'n/a')} per configuration, run in one seeded random order so that drift in the "
            f"host does not line up with any factor. Summaries use "
            f"{fmt_span(str(int(n.min())), str(int(n.max()))) if len(n) else 0} successful trials per configuration.",
            "",
            "**Intervals.** Every mean comes with a Student-t 95% confidence interval over its trials. A "
            "configuration is flagged unstable when its coefficient of variation exceeds "
            f"{fmt_num(UNSTABLE_CV * 100)}% or it has fewer than {MIN_TRIALS} successful trials. "
            "Challenger against the two_copy baseline: ratio of means with Fieller's 95% interval, Welch's t-test, "
            "Holm correction over the sizes of one curve.",
            "",
            "**Crossovers.** Along message size, each size is labelled significantly better, significantly worse, or "
            "neither. A single change from worse to better is a crossover: its size is the root of the difference "
            "of means, interpolated linearly on log2(size) between the bracketing sizes, and its 95% interval comes "
            "from a bootstrap that resamples the trials within each size. Otherwise the status says so (always "
            "better, never better, indistinguishable, or multiple crossings); no size is ever extrapolated beyond "
            "the tested range.",
        ]
    )


def copy_limit(sweep: Sweep) -> str:
    """Best throughput of each implementation against the ceiling its copies allow on this host."""
    calibration = sweep.manifest.get("calibration")
    if not calibration:
        return ("The sweep's manifest holds no memcpy calibration (`./inv calibrate --data DIR` adds one), so the "
                "distance to the copy-bound limit cannot be stated.")
    memcpy = calibration["memcpy_gbps"]
    rows = copy_limit_rows(sweep.summary, memcpy)
    table = markdown_table({
        "Implementation": code(row["implementation"]), "Copies": str(row["copies"]),
        "Best throughput, Gbit/s": f"{fmt_num(row['best_gbps'])} ({fmt_size(row['size_bytes'])}, "
                                   f"{row['threads']} thread{'s' if row['threads'] > 1 else ''})",
        "Copy bound, Gbit/s": fmt_num(row["limit_gbps"]), "Fraction of the bound": f"{row['fraction']:.0%}",
    } for row in rows)
    return (f"Single-core memcpy on this host copies {fmt_num(memcpy)} Gbit/s (best of "
            f"{calibration.get('runs', 'several')} copies of a {calibration.get('buffer_mib', '?')} MiB buffer, "
            "larger than the last-level cache, measured when the sweep started). With both ends on one CPU that "
            "core performs every copy of every byte, so an implementation making *k* copies cannot exceed "
            f"{fmt_num(memcpy)}/*k* Gbit/s. The rest of the gap is protocol processing, system calls and "
            f"scheduling.\n\n{table}")


def limitations_markdown(sweep: Sweep) -> str:
    """The limitations as a bullet list."""
    return "\n".join(f"- {item}" for item in limitations(sweep))


def _relative(path: Path | None, root: Path) -> str:
    if path is None:
        return "data/NAME"
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _size_option(size: int) -> str:
    """A size as run-sweep's --sizes takes it: 65536 -> '64K'."""
    for suffix, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    return str(size)


def reproduce(sweep: Sweep, project_root: Path) -> str:
    """The commands that re-render this report and re-measure its sweep, and the code version."""
    params = sweep.manifest.get("parameters", {})
    git = sweep.manifest.get("git", {})
    options = [
        ("implementations", ",".join(params.get("implementations", []))),
        ("workloads", ",".join(params.get("workloads", []))),
        ("sizes", ",".join(_size_option(s) for s in params.get("sizes", []))),
        ("rr-sizes", ",".join(_size_option(s) for s in params.get("rr_sizes") or [])),
        ("threads", ",".join(str(t) for t in params.get("threads", []))),
        ("trials", params.get("trials")),
        ("duration", params.get("duration_s")),
        ("warmup", params.get("warmup_s")),
        ("pinning", ",".join(params.get("pinning", []))),
        ("seed", params.get("seed")),
        ("mtu", params.get("mtu")),
        ("optmem-max", params.get("optmem_max")),
    ]
    words = [f"--{k} {v}" for k, v in options if v not in (None, "")] + (["--verify"] if params.get("verify") else [])
    lines = [f"./inv run-sweep --name {sweep.name}"]
    for word in words:
        if len(lines[-1]) + len(word) > 66:  # stay inside the page: verbatim text does not wrap
            lines[-1] += " \\"
            lines.append("    " + word)
        else:
            lines[-1] += " " + word
    commit = str(git.get("commit", "unknown"))
    return "\n".join(
        [
            "Re-render this report from the same data (no root needed):",
            "",
            "```",
            f"./inv report --data {_relative(sweep.directory, project_root)}",
            "```",
            "",
            "Measure a new quick sweep and report it in one command (needs root for the namespaces):",
            "",
            "```",
            "./inv report",
            "```",
            "",
            "Re-measure this sweep with the same settings (root):",
            "",
            "```",
            *lines,
            "```",
            "",
            f"Code version: commit `{commit}`"
            + (" (the working tree had uncommitted changes)." if git.get("dirty") else "."),
        ]
    )


def additional_sweep(sweep: Sweep) -> str:
    """A further sweep in brief: its settings, crossovers and limitations."""
    params = sweep.manifest.get("parameters", {})
    host = sweep.manifest.get("host", {})
    return "\n".join(
        [
            f"## Sweep {code(sweep.name)}",
            "",
            f"Host {host.get('hostname', 'unknown')} (kernel {host.get('kernel', 'unknown')}, {host.get('cores', '?')} "
            f"cores); sizes {_sizes(params.get('sizes', []))}; "
            + "threads "
            + ", ".join(str(t) for t in params.get("threads", []))
            + f"; pinning {', '.join(params.get('pinning', []))}; {params.get('trials', '?')} trials per "
            "configuration.",
            "",
            "**One-copy against two-copy.** " + answer_crossover(sweep, "one_copy"),
            "",
            "**Zero-copy against two-copy.** " + answer_crossover(sweep, "zero_copy"),
            "",
            "**Limitations.**",
            "",
            limitations_markdown(sweep),
        ]
    )


def further_sweeps(sweeps: Sequence[Sweep]) -> str:
    """The section on sweeps after the main one; empty when there are none."""
    if not sweeps:
        return ""
    return "\n\n".join(["# Further sweeps", *(additional_sweep(sweep) for sweep in sweeps)])


def figures_dir(sweep: Sweep) -> Path:
    """figures/NAME beside data/NAME: where copylab.analysis.analyze puts a sweep's figures too."""
    if sweep.directory is None:
        raise CopylabError(f"sweep {sweep.name}: loaded without a directory, so its figures have no place")
    return sweep.directory.resolve().parent.parent / "figures" / sweep.name


def zero_copy_diagram(sweep: Sweep) -> Path:
    """Draw the zero-copy path, annotated with the sweep's measured COPIED share, as figures/NAME/zerocopy_path.png."""
    counts = zero_copy_counts(sweep)
    return draw_zerocopy_path(figures_dir(sweep) / "zerocopy_path.png", counts["copied_fraction"] if counts else None)


def numbered(number: int, text: str) -> str:
    """A caption with its figure number."""
    return f"**Figure {number}.** {text}"


def figures_with_captions(sweep: Sweep, first: int) -> list[tuple[Path, str]]:
    """Draw the sweep's figures (copylab.figures) as PNGs; pair each with its caption, numbered from ``first``."""
    figures = make_figures(sweep.trials, sweep.summary, sweep.crossovers, sweep.manifest)
    paths = save_figures(figures, figures_dir(sweep))
    return [
        (path, numbered(first + i, caption(name, sweep)))
        for i, (name, path) in enumerate(zip(figures, paths, strict=True))
    ]


# ---------------------------------------------------------------- rendering


def _ensure_analysis(data_dir: Path) -> None:
    if all((data_dir / name).is_file() for name in RESULT_FILES):
        return
    analyze(data_dir)


def _latex_error(log: str) -> str:
    errors = [line for line in log.splitlines() if line.startswith("!")]
    return errors[0] if errors else "see the LaTeX log"


def export_pdf(executed: Path, out_pdf: Path) -> Path:
    """Export an executed report notebook to PDF through LaTeX, without code, prompts or stderr."""
    nb = nbformat.read(executed, as_version=4)
    parameters = nb.metadata.get("papermill", {}).get("parameters", {})
    nb.metadata["title"] = parameters.get("title", DEFAULT_TITLE)
    nb.metadata["authors"] = [{"name": parameters.get("author", DEFAULT_AUTHOR)}]
    nb.metadata["date"] = date.today().isoformat()
    for cell in nb.cells:
        # warnings belong in the executed notebook for whoever debugs, not in the paper
        outputs = cell.get("outputs", [])
        cell["outputs"] = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    exporter = PDFExporter()
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    try:
        resources = {"metadata": {"name": out_pdf.stem, "path": str(executed.parent)}}
        body, _ = exporter.from_notebook_node(nb, resources=resources)
    except LatexFailed as error:
        raise CopylabError(f"xelatex could not typeset the report: {_latex_error(error.output)}") from None
    out_pdf.write_bytes(body)
    return out_pdf


def render_report(
    data_dirs: Sequence[str | Path],
    out_pdf: str | Path,
    project_root: str | Path,
    title: str = DEFAULT_TITLE,
    author: str = DEFAULT_AUTHOR,
) -> Path:
    """Analyse sweeps not analysed yet, execute the report notebook on them and write ``out_pdf``.

    The first directory is the main sweep; the executed notebook is kept next to the PDF (same stem, .ipynb).
    """
    root = Path(project_root).resolve()
    dirs = [d if d.is_absolute() else root / d for d in map(Path, data_dirs)]
    if not dirs:
        raise CopylabError("no sweep directory given")
    for directory in dirs:
        if not (directory / "trials.csv").is_file():
            raise CopylabError(f"{directory}: not a sweep directory (no trials.csv)")
        _ensure_analysis(directory)
    missing = [tool for tool in ("xelatex", "pandoc") if shutil.which(tool) is None]
    if missing:
        raise CopylabError(
            f"{', '.join(missing)} not found: the PDF needs texlive-xetex and pandoc (./inv installs them)"
        )
    out_pdf = Path(out_pdf).resolve()
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    executed = out_pdf.with_suffix(".ipynb")
    execute(root / NOTEBOOK, executed, {"data_dirs": [str(d) for d in dirs], "title": title, "author": author},
            root, "report")
    return export_pdf(executed, out_pdf)
