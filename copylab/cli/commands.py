"""copylab's tasks, each a function of its options, and the table the command line and ./inv are built from: here
the study's own (a sweep, its analysis, the report, a comparison, the hand-in, the tests), in tools.py the commands
around it (building, the namespaces, calibration, the bench, the explorer, cleaning up).

A command raises CopylabError for bad input or an unusable environment and returns its exit status otherwise;
main.py (python -m copylab, the copylab script) and tasks.py (./inv) turn both into what the user sees.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copylab import error_catalogue, experiments
from copylab.cli.parsing import parse_list, parse_number, setting_value
from copylab.cli.tools import bench, build, calibrate, clean, explore, lab, netns_down, netns_status, netns_up
from copylab.declarations import settings
from copylab.error_catalogue import (
    ALIAS_AND_IMPLEMENTATIONS,
    ALIAS_OF_ANOTHER_EXPERIMENT,
    BUDGET_WITH_DATA,
    MORE_NEEDS_DATA,
    MORE_ON_REFERENCE,
    SECONDS_OUT_OF_RANGE,
    WORKERS_OUT_OF_RANGE,
)
from copylab.paths import DATA, REFERENCE_DATA, REFERENCES, REPORT, ROOT
from copylab.record.origin import ModifiedData
from copylab.study import REPORT_BUDGET_S

REQUIRED = object()  # an option without a default is an argument the command needs
NOTHING_COLLECTED = 5  # pytest's exit status when no test matched


@dataclass(frozen=True)
class Option:
    name: str  # the function's parameter; --name-with-dashes on the command line
    default: Any
    help: str


@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[..., int]
    options: Sequence[Option] = ()
    passes_on: bool = False  # takes the arguments after `--` (pytest's own options)

    @property
    def summary(self) -> str:
        return (self.run.__doc__ or "").strip()

    @property
    def headline(self) -> str:
        """Its summary's first paragraph on one line."""
        return " ".join(self.summary.split("\n\n")[0].split())


def say_if_modified(store: Any) -> None:
    """Warn when a sweep's trials.csv changed since its sweep ended (its analysis runs in a notebook's kernel,
    whose warnings the command line would not show)."""
    warning = store.origin().warning()
    if warning:
        warnings.warn(ModifiedData(f"{store.directory}: {warning}"), stacklevel=2)


# ./inv report between two hosts or on a fleet of pairs (copylab.cli.hosts; docs/testbeds.md)
HOST_REPORT_OPTIONS = (
    Option("server_host", None, "run the report's sweeps between two hosts: the server's, USER@HOST[:PORT]"),
    Option("client_host", None, "with --server-host: the client's host, USER@HOST[:PORT]"),
    Option("server_address", None, "where the client reaches the server on the data path (default: its SSH host)"),
    Option("ssh_config", None, "the ssh config to log in with (for every host, the fleet's too)"),
    Option("fleet", None, "a TOML file of [[pair]] tables: the same study on every pair, and one comparison report"),
)


def _sweep_overrides(options: dict[str, Any]) -> dict[str, Any]:
    """The settings run-sweep's options give (None: not given), an experiment's own word (--models) included."""
    overrides = {
        s.name: setting_value(s, options.get(parameter)) for s in settings.SETTINGS if (parameter := s.parameter)
    }
    for experiment in experiments.EXPERIMENTS.values():
        aliased = options.get(experiment.noun) if experiment.noun != "implementations" else None
        if aliased is None:
            continue
        if overrides["implementations"] is not None:
            raise ALIAS_AND_IMPLEMENTATIONS.error(noun=experiment.noun)
        if overrides["experiment"] not in (None, experiment.name):
            raise ALIAS_OF_ANOTHER_EXPERIMENT.error(noun=experiment.noun, experiment=experiment.name)
        overrides.update(implementations=parse_list(aliased), experiment=experiment.name)
    return overrides


def run_sweep(
    name: str = "sweep",
    profile: str = "quick",
    sweep_file: str | None = None,
    resume: bool = False,
    analyze: bool = True,
    **options: Any,
) -> int:
    """Run every configuration of a sweep in namespaces (root), in a user namespace (no root) or between two
    hosts over SSH, writing data/NAME/trials.csv."""
    from copylab.declarations.config import make_config
    from copylab.measure import sweep
    from copylab.programs.build import build as run_build
    from copylab.record.store import SweepStore

    config = make_config(name, profile, Path(sweep_file) if sweep_file else None, **_sweep_overrides(options))
    if not config.server_host:  # two hosts build on each host
        run_build(config.sanitize)
    result = sweep.run(config, SweepStore.under(DATA, config.name), resume=resume, progress=sys.stderr.isatty())
    print(result.summary())
    if analyze and (result.ok or result.skipped):  # skipped: ok rows of an earlier, interrupted run
        analyze_directory(result.directory)
    if result.failed:
        print(f"copylab: {result.failed} of {result.ran} trials failed (see the error column)", file=sys.stderr)
        return 1
    return 0


def _run_sweep_options() -> list[Option]:
    """run-sweep's options: its own, one per setting, and each experiment's word for its implementations."""
    own = [
        Option("name", "sweep", "sweep name: data goes to data/NAME"),
        Option(
            "profile",
            "quick",
            "a ready-made sweep of the experiment: "
            + "; ".join(f"{e.name}: {', '.join(e.profiles)}" for e in experiments.EXPERIMENTS.values())
            + " (docs/sweeps.md: Profiles)",
        ),
        Option("sweep_file", None, "TOML file with any of the settings below, by name (docs/sweeps.md)"),
        Option("resume", False, "run exactly the trials of data/NAME not yet recorded as ok"),
        Option("analyze", True, "analyse the sweep when it ends (default yes)"),
    ]
    own += [
        Option(s.parameter, s.default if s.kind == "bool" else None, s.help)
        for s in settings.SETTINGS
        if s.option and s.parameter
    ]
    own += [
        Option(experiment.noun, None, f"the {experiment.name} experiment's {experiment.noun} (implies it)")
        for experiment in experiments.EXPERIMENTS.values()
        if experiment.noun != "implementations"
    ]
    return own


def analyze_directory(data: Path) -> None:
    from copylab.study.pipeline import analyse_one

    analyse_one(data)


def analyze(data: str = str(REFERENCE_DATA)) -> int:
    """Run the analysis notebook on a sweep (statistics, crossovers, figures)."""
    from copylab.record.store import SweepStore

    say_if_modified(SweepStore(data))
    analyze_directory(Path(data))
    return 0


def _sweep_stores(data: str) -> list[Any]:
    """The sweeps a report is rendered from, each checked to be one."""
    from copylab.record.store import SweepStore

    stores = [SweepStore(directory) for directory in parse_list(data) or []]
    for store in stores:
        if not store.trials_path.is_file():
            raise error_catalogue.NOT_A_SWEEP.error(directory=store.directory, missing="trials.csv")
    return stores


def _seconds(option: str, value: Any) -> float | None:
    """A time option in seconds, above 0 and at most a day; None when not given."""
    if value is None:
        return None
    seconds: float = parse_number(option, value, float)
    if not 0 < seconds <= 24 * 3600:
        raise SECONDS_OUT_OF_RANGE.error(option=option, value=value)
    return seconds


def report(
    data: str | None = None,
    title: str | None = None,
    author: str | None = None,
    more: str | None = None,
    budget: str | None = None,
    **hosts: str | None,
) -> int:
    """The main job: build, run the sweeps the experiments declare for the report under one time budget, analyse
    them and write report/report.pdf."""
    from copylab.cli import hosts as on_hosts
    from copylab.programs.build import build as run_build
    from copylab.study import pipeline

    if on_hosts.asked(hosts):
        text = {k: v for k, v in (("title", title), ("author", author)) if v is not None}
        given = {**hosts, "data": data, "more": more}
        return on_hosts.report_on_hosts(given, _seconds("budget", budget) or REPORT_BUDGET_S, text)

    seconds = _seconds("more", more)
    if data is None and seconds is not None:
        raise MORE_NEEDS_DATA.error()
    if data is not None and budget is not None:
        raise BUDGET_WITH_DATA.error()
    stores = pipeline.measure(_seconds("budget", budget) or REPORT_BUDGET_S) if data is None else _sweep_stores(data)
    if seconds is not None:
        committed = [store.name for store in stores if store.directory in {path.resolve() for path in REFERENCES}]
        if committed:
            raise MORE_ON_REFERENCE.error(names=", ".join(committed))
        run_build()
        pipeline.more_time(stores, seconds)
    for store in stores:
        say_if_modified(store)
    pipeline.analyse(stores)
    kwargs = {k: v for k, v in (("title", title), ("author", author)) if v is not None}
    pdf = pipeline.render(stores, REPORT / "report.pdf", **kwargs)
    print(f"report: {pdf} (and as a web page: {pdf.with_suffix('.html')})")
    return 0


def compare(a: str, b: str, out: str | None = None, shared_only: bool = False) -> int:
    """What changed from sweep A to sweep B: B/A per configuration and main metric with verdicts, crossovers,
    manifest differences; prints the paths it wrote, one per line. Sweeps of different grids or methods are
    refused unless --shared-only."""
    from copylab.record.grids import check_comparable
    from copylab.record.store import SweepStore
    from copylab.study import pipeline

    stores = [SweepStore(directory) for directory in (a, b)]
    for store in stores:
        if not store.trials_path.is_file() or not store.manifest_path.is_file():
            raise error_catalogue.NOT_A_SWEEP.error(directory=store.directory, missing="trials.csv and manifest.json")
    parameters = [store.read_manifest().parameters for store in stores]
    check_comparable(parameters[0], parameters[1], (a, b), shared_only)
    directory = Path(out) if out else REPORT / "comparisons" / f"{stores[0].name}-vs-{stores[1].name}"
    for path in pipeline.compare(stores[0], stores[1], directory):
        print(path)
    return 0


def handin(out: str | None = None) -> int:
    """What a student hands in, as one archive: the report, its sweeps and their figures, with SHA256SUMS inside."""
    from copylab.study.handin import hand_in

    return hand_in(Path(out) if out else None)


def test(k: str | None = None, x: bool = False, workers: str | None = None, passed_on: Sequence[str] = ()) -> int:
    """Run the whole test suite (needs root for the namespace tests); pytest's own options follow `--`.

    The tests run a module per worker, two at a time; then those marked serial, which measure this machine's speed,
    run alone."""
    # Not more workers than CPUs: with three on two CPUs a server's fairness test starved (0.28 against 0.5).
    count = parse_number("workers", workers, int) if workers is not None else min(2, os.cpu_count() or 1)
    if count < 1:
        raise WORKERS_OUT_OF_RANGE.error(count=count, cpus=os.cpu_count())
    selection = [*(["-k", k] if k else []), *passed_on]
    if os.geteuid() != 0:
        # said first, in one line: without root a fifth of the suite skips, and a run that skips still passes
        subprocess.call([sys.executable, "-m", "tests.skips", *selection], cwd=ROOT)
    # both parts are one run: the robustness record keeps this run's cases alone (tests/robustness_table.py)
    env = dict(os.environ, COPYLAB_TEST_RUN=f"{os.getpid()}-{secrets.token_hex(4)}")
    # the shared part lists the modules that hold serial tests, the serial part collects those alone (conftest.py)
    listed = ROOT / "test-artifacts" / f"serial-modules-{env['COPYLAB_TEST_RUN']}.txt"
    env["COPYLAB_SERIAL_MODULES"] = str(listed)
    # the slowest tests named at the end: what the suite costs is a figure of its own (docs/measured.md, test_s)
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "--durations=12", *(["-k", k] if k else [])]
    command += ["-x"] if x else []
    parallel = ["-n", str(count), "--dist", "loadfile"] if count > 1 else []
    shared = subprocess.call([*command, *parallel, "-m", "not serial", *passed_on], cwd=ROOT, env=env)
    if shared not in (0, NOTHING_COLLECTED) and x:
        listed.unlink(missing_ok=True)
        return shared
    alone = subprocess.call([*command, "-m", "serial", *passed_on], cwd=ROOT, env=env)
    listed.unlink(missing_ok=True)
    # a part with nothing to run (say -k picks tests of one part only) is no failure, both parts empty are
    codes = {shared, alone} - {NOTHING_COLLECTED} or {NOTHING_COLLECTED}
    # ROBUSTNESS.md: this run's table, written to test-artifacts/, held to the committed one (after the whole suite,
    # case by case both ways; after part of it, the cases it ran)
    whole = [] if selection else ["--whole"]
    table = subprocess.call(
        [sys.executable, "-m", "tests.robustness_table", "--run", env["COPYLAB_TEST_RUN"], *whole], cwd=ROOT
    )
    return max(*codes, table)


DATA_HELP = "sweep directory, e.g. data/reference"
COMMANDS: tuple[Command, ...] = (
    Command("build", build, [Option("sanitize", None, "address, undefined or thread: an instrumented build")]),
    Command(
        "netns-up",
        netns_up,
        [
            Option("server", "copylab_srv", "the server's namespace"),
            Option("client", "copylab_cli", "the client's namespace"),
            Option("mtu", 1500, "the link's MTU"),
            Option("optmem_max", 131072, "net.core.optmem_max in both namespaces"),
        ],
    ),
    Command("netns-down", netns_down),
    Command("netns-status", netns_status),
    Command("run-sweep", run_sweep, _run_sweep_options()),
    Command("analyze", analyze, [Option("data", str(REFERENCE_DATA), DATA_HELP)]),
    Command(
        "report",
        report,
        [
            Option(
                "data",
                None,
                "render from these existing sweeps (comma list: a copies sweep, optionally a servers sweep and "
                "more; a copies sweep on the sink or receiving by mmap is found by its manifest) instead of "
                "running the declared sweeps (no root needed)",
            ),
            Option("title", None, "report title"),
            Option("author", None, "author line"),
            Option(
                "more",
                None,
                "with --data: go on measuring those sweeps for this many seconds more, where their deciding "
                "comparisons are still undecided, then render (the report prints the command when one is open)",
            ),
            Option(
                "budget",
                None,
                f"seconds of measuring for all the sweeps: their first passes, then blocks where the study's answers "
                f"are still undecided (default {REPORT_BUDGET_S:g}; building, analysing and rendering come on top)",
            ),
            *HOST_REPORT_OPTIONS,
        ],
    ),
    Command(
        "compare",
        compare,
        [
            Option("a", REQUIRED, "the sweep directory compared against (A)"),
            Option("b", REQUIRED, "the sweep directory compared (B), of the same experiment"),
            Option(
                "out",
                None,
                "where comparison.csv, the figures and comparison.pdf go (default: report/comparisons/A-vs-B)",
            ),
            Option("shared_only", False, "compare what sweeps of other grids or methods share (says what is left out)"),
        ],
    ),
    Command("handin", handin, [Option("out", None, "the archive to write (.tar.gz; default: report/handin.tar.gz)")]),
    Command(
        "test",
        test,
        [
            Option("k", None, "only tests matching this pytest expression"),
            Option("x", False, "stop at the first failure"),
            Option("workers", None, "tests run this many at a time (default: 2, or 1 on a single CPU)"),
        ],
        passes_on=True,
    ),
    Command(
        "lab",
        lab,
        [
            Option("port", 8888, "port on localhost"),
            Option("data", str(REFERENCE_DATA), "default sweep shown by the explorer"),
        ],
    ),
    Command(
        "explore",
        explore,
        [
            Option("port", 8866, "port on localhost"),
            Option("data", str(REFERENCE_DATA), "default sweep shown by the explorer"),
        ],
    ),
    Command("calibrate", calibrate, [Option("data", None, "also store the result in this sweep's manifest.json")]),
    Command(
        "bench",
        bench,
        [
            Option("pairs", 5, "interleaved copylab/iperf3 pairs per comparison"),
            Option("duration", 2.0, "seconds per trial"),
            Option("rows", 100000, "rows of the synthetic trials.csv the analysis is timed on"),
            Option("smoke", False, "run every part as briefly as possible (what CI runs)"),
        ],
    ),
    Command("clean", clean),
)
