"""The report's sections around the answers: setup, method, Part A, the copy limit, limitations, reproduction.

Markdown computed from a sweep's Results and its typed manifest; nothing here types in a result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path

from copylab import experiments
from copylab.analysis.noise import MIN_TRIALS as MIN_SPREAD_TRIALS
from copylab.analysis.noise import spread_explained
from copylab.analysis.stats import IMPRECISE, MIN_TRIALS
from copylab.calibration.record import FINDING_RATIO, ratio_rows
from copylab.declarations import implementations, settings
from copylab.declarations.metrics import add_metrics
from copylab.declarations.schema import COLUMN_NAMES
from copylab.declarations.settings import LISTS as LIST_KINDS
from copylab.declarations.sweep_config import SweepConfig
from copylab.experiments import plugins
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, fmt_span, markdown_table, md_escape
from copylab.measure.running.spec import cpus_for
from copylab.paths import ROOT
from copylab.record.manifest import Manifest
from copylab.record.tables import CONFIG_KEYS
from copylab.report import limitation, spending, transport_prose
from copylab.report.results import (
    Results,
    between_hosts,
    every_trial,
    present,
)

# What --sender-pages set on the host for the sweep (copylab.testbeds.sender_pages).
SENDER_PAGES = {
    "large": "multi-page (32 KiB) buffers, the kernel's default",
    "small": "small (4 KiB): net.core.high_order_alloc_disable=1 for the sweep",
}


def _sizes(sizes: Sequence[int]) -> str:
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
        ("Stream message sizes", _sizes(params.sizes)),
        ("Request/response sizes", _sizes(params.rr_sizes)),
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


def _topology(results: Results) -> str:
    params = results.manifest.parameters
    if not between_hosts(results):
        return (
            "**Topology.** The server (the variant under test; it sends) and the client (it receives) run in two "
            f"network namespaces joined by a veth pair with an MTU of {params.mtu} B, created before the sweep and "
            "removed after it."
        )
    return (
        f"**Topology.** The server (the variant under test; it sends) runs on {code(params.server_host or '')} and "
        f"the client (it receives) on {code(params.client_host or '')}; copylab drives both over SSH and the "
        f"trial traffic crosses the network to {code(params.server_address or '')} (the setup table names each "
        "host's interface, driver, MTU and offloads). For the zero-copy senders this path matters: on a NIC that "
        "supports scatter-gather the kernel hands the pinned pages to the device, so their completions stop "
        "carrying the COPIED flag; where the device or the path cannot use them as they are, the kernel copies "
        "them anyway. The copied fraction below is what this path did."
    )


def _pinning_text(pinning: str) -> str:
    server, client = cpus_for(pinning)
    if server is None:
        return f"{code(pinning)}: no affinity, the scheduler places both ends"
    if server == client:
        return f"{code(pinning)}: sender and receiver both on CPU {server} (taskset)"
    return f"{code(pinning)}: sender on CPU {server}, receiver on CPU {client} (taskset)"


def _baselines_text(results: Results) -> str:
    by_baseline: dict[str, list[str]] = {}
    for challenger in present(results):
        for baseline in implementations.get(challenger).baselines:
            if baseline in present(results):
                by_baseline.setdefault(baseline, []).append(challenger)
    if not by_baseline:
        return "No implementation was measured together with its baseline."
    against = "; ".join(
        f"{', '.join(code(c) for c in challengers)} against {code(baseline)}"
        for baseline, challengers in by_baseline.items()
    )
    if results.manifest.parameters.design != "blocked":
        return (
            f"Each implementation against its baseline ({against}): ratio of means with Fieller's 95% interval, "
            "Welch's t-test, Holm correction over the sizes of one curve."
        )
    return (
        f"Each implementation against its baseline ({against}), paired within blocks. The ratio is the geometric "
        "mean of the ratios of the two implementations' trials in each block they share. Its interval is the t "
        "interval of their logarithms, its test the paired t-test, with Holm correction over the points of one "
        "curve. A block's effect (the speed the host gives the guest while the block runs) scales both "
        "implementations alike. On the log scale it is a random effect added to both, and the mixed model with the "
        "block as a random effect estimates their difference by exactly this mean and interval. A bootstrap over "
        "blocks would need more blocks than a sweep runs before its interval stops being too narrow. Where a metric "
        "is zero in some trial (retransmits, say) the unpaired analysis stands (ratio of means, Fieller, Welch), "
        "and comparisons.csv says which was used."
    )


def _configuration_totals(results: Results) -> str:
    """Why the report counts its configurations three ways: all of them (Part C), those in the study's layout (the
    Limitations' count), those of them receiving by copy (the figures' and the retransmits')."""
    keys = [key for key in CONFIG_KEYS if key in results.trials.columns]
    every = every_trial(results)[keys].drop_duplicates()
    study = results.trials[keys].drop_duplicates()
    by_copy = study[study["receive"] == implementations.BASELINE_RECEIVE]
    if len(every) == len(study) == len(by_copy):
        return ""
    return (
        f". The sweep has {len(every):,} configurations (Part C counts them all); {len(study):,} of them hold the "
        f"message in the study's layout (the Limitations count these), and {len(by_copy):,} of those receive by "
        "copy (the figures of Part D and the count of retransmits)"
    )


def _repetitions(results: Results) -> str:
    """How the trials were ordered and how many each configuration got, and why."""
    params, trials = results.manifest.parameters, every_trial(results)
    counted = f"{len(trials):,} trials in total ({int((trials['status'] == 'ok').sum()):,} succeeded)"
    arms = len(trials) - len(results.trials)
    if arms:
        others = sorted(set(trials["layout"]) - set(results.trials["layout"]))
        counted += (
            f"; {arms:,} of them held the message in another layout ({', '.join(code(o) for o in others)}). "
            f"Only the section on message layouts compares those, so the other sections rest on "
            f"{len(results.trials):,}"
        )
    counted += _configuration_totals(results)
    n = results.summary["n"]
    per = fmt_span(str(int(n.min())), str(int(n.max()))) if len(n) else "0"
    if params.design != "blocked":
        return (
            f"**Repetitions.** {counted}. They ran {params.trials} per configuration, in one seeded random order so "
            f"that drift in the host does not line up with any factor. Summaries use {per} successful trials per "
            "configuration."
        )
    text = (
        f"**Repetitions.** {counted}. They ran in blocks: a block runs every implementation, in each of its "
        "receive modes, at one point (workload, size, threads, pinning) back to back in a seeded random order, and "
        "the blocks of a round are shuffled across points; a trial's repetition number is its block's. "
    )
    if params.budget_s is None:
        return text + f"{params.trials} blocks per point; summaries use {per} successful trials per configuration."
    pairs = implementations.deciding_pairs(experiments.get(params.experiment))
    deciding = ", ".join(f"{code(c)} against {code(b)}" for c, b in pairs if c in present(results))
    return text + (
        f"A first pass ran {params.trials} blocks of the implementations whose comparisons decide the study's "
        f"answers ({deciding}) at every point, and of every implementation at the first thread count (at the side "
        "sizes only, where the sweep has them). The time left "
        "then went to a block at every point where one of those comparisons was still undecided (first the points "
        "that needed the fewest more blocks to come out significant, a point where the estimate changes sign beside "
        "a significant one counting half), each up to "
        f"{params.max_trials} blocks; *Where the time went* below says how much each sweep got. So configurations "
        f"rest on {per} successful trials: the most where an answer was hardest to decide."
    )


def _noise(results: Results) -> str:
    """What explains the spread between identical trials in this sweep, measured."""
    experiment = implementations.experiment(results.manifest.parameters.experiment)
    complete = set(COLUMN_NAMES) <= set(results.trials.columns)
    found = spread_explained(add_metrics(results.trials), experiment.name, experiment.workload) if complete else []
    if not found:
        return (
            "**What makes identical trials differ.** The sweep has too few repeated trials with the covariates "
            "recorded (trials.csv schema 4 and later record them) to say."
        )
    shares = "; ".join(f"{item.meaning}: {fmt_pct(item.share)}" for item in found)
    names = {item.covariate for item in found}
    text = (
        "**What makes identical trials differ.** Of the spread of the headline metric between identical trials "
        f"(logarithms, centred within each configuration with {MIN_SPREAD_TRIALS} or more trials, "
        f"{found[0].configurations} configurations), the share each covariate explains alone: {shares}."
    )
    if len(found) > 1:
        text += (
            " Each share is that covariate's own (its squared correlation with the metric, or for the block the "
            "share of the spread between blocks); the covariates move together, so the shares overlap and need not "
            "add up to 100%."
        )
    if names & {"probe_ns", "probe_copy_ns"}:
        text += (
            " The host's speed is probed on the trial's CPUs just before and after each trial. A virtual CPU slows "
            "down for seconds when the host gives its core or its cache to other guests, and nothing inside the "
            "guest shows it."
        )
    if "rcv_receive_buffer_bytes" in names:
        text += _receive_buffer_share(results.manifest)
    if "block" in names:
        text += (
            " What the block explains is what pairing within blocks removes from a comparison; the rest is fixed "
            "per trial, which a longer window does not average away (`./inv bench` measures both lengths: "
            "docs/performance.md), so many short trials decide more per second than few long ones: hence the short "
            "windows."
        )
    return text


def _receive_buffer_share(manifest: Manifest) -> str:
    """What the receive buffer's share means: the kernel's sizing (--socket-buffer 0), or what is left of it when
    the sweep fixed the buffers."""
    chosen = manifest.parameters.socket_buffer
    if not chosen:
        return (
            " The kernel sized this sweep's socket buffers, and the receive buffer it grew each connection to is "
            "recorded: its share is the transport's, which fixed buffers (`--socket-buffer`, the default) remove."
        )
    return (
        f" This sweep fixed the socket buffers at {fmt_size(chosen)} (`--socket-buffer`); the receive buffer each "
        "connection reported is recorded all the same, and its share is what still varied with it."
    )


def _in_flight(manifest: Manifest) -> str:
    """How many bytes the zero-copy senders kept in flight and why; "" for a sweep that set none."""
    chosen = manifest.in_flight
    parameters = manifest.parameters
    if not any(implementations.uses_zero_copy(name) for name in parameters.implementations):
        return ""
    if chosen is None:
        given = parameters.zc_inflight
        return "" if given is None else f"**Zero-copy ring.** At most {fmt_size(given)} in flight (`--zc-inflight`)."
    text = f"**Zero-copy ring.** At most {fmt_size(chosen.zc_inflight)} in flight: {chosen.how}."
    if chosen.throughput_gbps is not None and chosen.srtt_us is not None and chosen.bandwidth_delay_bytes is not None:
        text += (
            f" Measured at the sweep's start: {fmt_num(chosen.throughput_gbps)} Gbit/s with a smoothed round trip of "
            f"{fmt_num(chosen.srtt_us)} µs, a bandwidth-delay product of {fmt_size(chosen.bandwidth_delay_bytes)}."
        )
    return text


def method(results: Results, sweeps: Sequence[Results] = ()) -> str:
    """Topology, what one trial is, trial counts, where each sweep's time went (SWEEPS: every sweep of the report),
    and how intervals and crossovers are computed."""
    params = results.manifest.parameters
    return "\n".join(
        [
            f"{_topology(results)} CPU pinning of both ends: {'; '.join(_pinning_text(p) for p in params.pinning)}.",
            "",
            "**One trial.** Every trial starts a fresh server and a fresh client process. The client opens one "
            "connection per thread; the server serves each with its own worker thread. After a warm-up of "
            f"{fmt_num(params.warmup_s)} s the client measures a window of {fmt_num(params.duration_s)} s "
            "(CLOCK_MONOTONIC); throughput is the bytes all client threads received in the window over its measured "
            "length. `perf stat` runs on both processes but is enabled only inside the window, through its control "
            "fifo, so start-up, warm-up and teardown are not counted. CPU time and context switches come from "
            "getrusage over the same window.",
            "",
            transport_prose.paragraph(results.manifest),
            "",
            *([ring, ""] if (ring := _in_flight(results.manifest)) else []),
            _repetitions(results),
            "",
            spending.paragraph(sweeps or [results]),
            "",
            _noise(results),
            "",
            "**Intervals.** Every mean comes with a Student-t 95% confidence interval over its trials. A "
            f"configuration is flagged unstable when that interval reaches more than {fmt_num(IMPRECISE * 100)}% "
            f"either side of its mean or it has fewer than {MIN_TRIALS} successful trials: its mean is not known "
            "well enough yet. " + _baselines_text(results),
            "",
            "**Crossovers.** Along message size, each size is labelled significantly better, significantly worse, or "
            "neither. A single change from worse to better is a crossover. Its size is where the difference (the mean "
            "within-block log ratio, in a blocked design) crosses zero, interpolated linearly on log2(size) between "
            "the sizes on either side. Its 95% interval comes from a bootstrap that resamples the blocks (or the "
            "trials) within each size. Otherwise the comparison is one of the other cases: better at every size where "
            "the two differ, never better, not distinguishable at any size, or changing sign more than once; no size "
            "is ever extrapolated beyond the tested range.",
            *(["", calibration] if (calibration := _calibration(results)) else []),
        ]
    )


def _calibration(results: Results) -> str | None:
    """The copy calibration's ratios at every size with their spread over rounds, and the rule that makes one a
    finding; None when the manifest holds no copy samples (older sweeps)."""
    record = results.manifest.calibration
    if record is None or not record.copy_points:
        return None
    rounds = max(len(point.ns_per_byte) for point in record.copy_points)
    found = len(record.findings)
    return (
        f"**The copy calibration.** Before the trials, each way of copying was timed in {rounds} rounds, each a "
        "separate process. The table gives, per copy size, the ratio of two ways' median costs. In brackets are its "
        f"least and its most over the rounds. A ratio is a finding only when its least value exceeds "
        f"{fmt_num(FINDING_RATIO)}, so that noise cannot decide it; this calibration has "
        f"{found} {'finding' if found == 1 else 'findings'}.\n\n" + markdown_table(ratio_rows(record))
    )


def limitations(results: Results, companions: Mapping[str, Results] | None = None) -> str:
    """The sweep's limitations as a Markdown bullet list, each computed from its data or manifest and, for the main
    sweep, the sweeps its experiment claims beside it (COMPANIONS, copylab.report.compose.arrange)."""
    main = limitation.main_metric(results.summary)
    unstable = main[main["unstable"]]
    manifest = results.manifest
    items = [
        limitation.failed_trials(every_trial(results)),
        limitation.unstable_means(main, unstable),
        limitation.trials_to_settle(unstable, results),
        limitation.trials_per_configuration(main),
        limitation.missing_counters(results),
        limitation.shared_machine(results),
        *plugins.get(manifest.parameters.experiment).report.limitations(results, companions),
        limitation.retransmits_seen(results),
        limitation.without_root(manifest),
        limitation.not_measured(manifest),
        limitation.interrupted(manifest),
        limitation.uncommitted_code(manifest),
    ]
    return "\n".join(f"- {item}" for item in items if item is not None)


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _size_option(size: int) -> str:
    """A size as run-sweep's --sizes takes it: 65536 -> '64K'."""
    for suffix, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    return str(size)


# What the printed command never repeats: the namespaces' names are the run's own (a second run picks free ones).
NOT_REPEATED = frozenset({"namespaces"})


def _option_word(setting: settings.Setting, value: object) -> str | None:
    """SETTING at VALUE as run-sweep takes it ('--sizes 64,1K'); None where the option would say nothing."""
    if value is None or value == "" or (isinstance(value, (list, tuple)) and not value):
        return None
    if setting.kind == "bool":
        if value == setting.default:
            return None
        return f"--{setting.option}" if value else f"--no-{setting.option}"
    if setting.kind == "sizes":
        return f"--{setting.option} {','.join(_size_option(int(v)) for v in value)}"  # type: ignore[attr-defined]
    if setting.kind in LIST_KINDS:
        return f"--{setting.option} {','.join(str(v) for v in value)}"  # type: ignore[attr-defined]
    return f"--{setting.option} {value}"


def remeasure_command(results: Results) -> list[str]:
    """run-sweep's words that measure this sweep's grid again, under a new name (run-sweep refuses an existing one):
    every setting the manifest records, its budget and layout and receive arms included, so that the command plans
    the same configurations."""
    parameters = results.manifest.parameters.parameters()
    words = [f"--name {results.name}-again"]
    if results.manifest.profile in experiments.get(parameters["experiment"]).profiles:
        words.append(f"--profile {results.manifest.profile}")
    study_layout_only = list(parameters["layout"]) == [implementations.STUDY_LAYOUT] and not parameters["layout_for"]
    for setting in settings.SETTINGS:
        if setting.option is None or setting.name in NOT_REPEATED or (setting.name == "layout" and study_layout_only):
            continue
        word = _option_word(setting, parameters[setting.name])
        if word is not None:
            words.append(word)
    return words


# The longest line of a command the PDF sets inside its margin (verbatim text does not wrap).
COMMAND_LINE = 66


def _wrapped(words: list[str], first: str) -> list[str]:
    """A shell command's words on lines of at most COMMAND_LINE characters, continued by '\\'.  A word longer than
    a line (an option's long list) is cut after a comma: a '\\' at a line's end with no space before it and none
    at the next line's start continues the word itself."""
    lines = [first]
    for word in words:
        if len(lines[-1]) + len(word) < COMMAND_LINE:
            lines[-1] += " " + word
            continue
        lines[-1] += " \\"
        lines.append("    " + word)
        while len(lines[-1]) > COMMAND_LINE and "," in lines[-1][: COMMAND_LINE - 1]:
            cut = lines[-1].rindex(",", 0, COMMAND_LINE - 1) + 1
            lines[-1:] = [lines[-1][:cut] + "\\", lines[-1][cut:]]
    return lines


def render_command(sweeps: Sequence[Results]) -> list[str]:
    """./inv report's command that renders a report from SWEEPS, the main one first, one directory a line: a
    backslash at a line's end continues the word, so the comma list stays one argument and inside the margin."""
    directories = [_relative(sweep.store.directory) for sweep in sweeps]
    return ["./inv report --data \\", *(f"{d},\\" for d in directories[:-1]), directories[-1]]


def reproduce(results: Results, sweeps: Sequence[Results] = ()) -> str:
    """The commands that re-render this report from every sweep it was built from (SWEEPS, the main one RESULTS
    first; RESULTS alone by default) and re-measure its main sweep, and the code version."""
    git = results.manifest.git
    return "\n".join(
        [
            "Re-render this report from the same data, every sweep it was built from (no root needed):",
            "",
            "```",
            *render_command(sweeps or [results]),
            "```",
            "",
            "Measure a new quick sweep of each experiment and report them in one command (no root needed: without "
            "root copylab creates the namespaces inside a user namespace):",
            "",
            "```",
            "./inv report",
            "```",
            "",
            "Measure this sweep's configurations again, with every setting it recorded, under a new name (no root "
            "needed either):",
            "",
            "```",
            *_wrapped(remeasure_command(results), "./inv run-sweep"),
            "```",
            "",
            f"Code version: commit `{git.commit}`"
            + (" (the working tree had uncommitted changes)." if git.dirty else "."),
        ]
    )


def sweep_heading(results: Results) -> str:
    """The heading and settings line of a further sweep in the report."""
    params, host = results.manifest.parameters, results.manifest.host
    grid = (
        f"{params.experiment} experiment; response sizes {_sizes(params.rr_sizes)}; connections "
        + ", ".join(str(c) for c in params.connections)
        if params.connections
        else f"sizes {_sizes(params.sizes)}"
    )
    return "\n".join(
        [
            f"## Sweep {code(results.name)}",
            "",
            f"Host {md_escape(host.hostname)} (kernel {md_escape(host.kernel)}, {host.cores} cores); {grid}; threads "
            + ", ".join(str(t) for t in params.threads)
            + f"; CPU pinning {', '.join(params.pinning)}; {params.trials} trials per configuration.",
        ]
    )
