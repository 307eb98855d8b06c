"""./inv report from start to end: the sweeps the experiments declare for it, measured under one budget
(copylab.study.budget), their analyses side by side, and the report rendered from them."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from copylab import experiments
from copylab.analysis.analyze_sweep import run_analysis_notebook
from copylab.analysis.two_runs import compare_runs
from copylab.declarations.config import make_config
from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import COUNTS_NEED_ROOT, NO_TRIAL_SUCCEEDED
from copylab.formatting import fmt_num
from copylab.measure import sweep
from copylab.measure.host.provenance import now_iso
from copylab.paths import DATA
from copylab.programs.build import build
from copylab.record.manifest import FirstPass
from copylab.record.origin import ModifiedData
from copylab.record.store import SweepStore
from copylab.report.comparison import write_comparison
from copylab.report.render import render_report
from copylab.study import REPORT_BUDGET_S
from copylab.study.budget import MAX_CYCLES, shares, still_open
from copylab.study.link import Link, card_mtu, not_between_hosts
from copylab.study.sizing import go_on_as, run_pilot, size_first_pass
from copylab.study.verification import verified_pass
from copylab.testbeds import sender_pages


def report_sweeps(stamp: str) -> list[tuple[str, str, str]]:
    """(experiment, profile, sweep name) of every sweep `./inv report` runs, in order: each experiment's declared
    `reported` profiles, the main experiment's first, each named PROFILE[-EXPERIMENT]-STAMP (the main experiment's
    without its name)."""
    return [
        (experiment.name, profile, "-".join([profile, *([] if experiment.main else [experiment.name]), stamp]))
        for experiment, profile in experiments.reported()
    ]


def _not_here(experiment: str, profile: str, link: Link | None = None) -> str | None:
    """Why the profile's sweep is not measured: between two hosts (LINK), why it means nothing there; here, why this
    user cannot run it (it would change a setting of the whole host, or count with BPF: both need root); None when
    it can."""
    if link is not None:
        return not_between_hosts(experiment, profile)
    if os.geteuid() == 0:
        return None
    config = make_config("check", profile, experiment=experiment)
    # Of the reported sweeps only the one that exists to count the kernel's copies counts them (docs/method.md).
    return sender_pages.refusal_without_root(config.sender_pages) or (
        COUNTS_NEED_ROOT.text() if config.kernel_copies else None
    )


def first_passes(
    stamp: str,
    budget_s: float,
    started: float,
    link: Link | None = None,
    settings: dict[str, Any] | None = None,
    data_root: Path = DATA,
) -> tuple[list[SweepStore], dict[str, str], FirstPass]:
    """Every reported sweep's first pass, one after the other, the main sweep's begun by a pilot that sizes the first
    passes of the sweeps whose verdicts the answers quote (copylab.study.sizing); their stores, the profiles that
    could not run here with the reason, and how the first pass was sized.  STARTED: when the budget's clock started.
    Between the two hosts of LINK, every sweep runs with its SETTINGS (the hosts, the card's MTU)."""
    given = settings or {}
    skipped: dict[str, str] = {}
    configs: dict[str, SweepConfig] = {}
    for experiment, profile, name in report_sweeps(stamp):
        why = _not_here(experiment, profile, link)
        if why:
            print(f"copylab: the {profile} sweep is not measured: {why}", file=sys.stderr)
            skipped[profile] = why
            continue
        # A budget of nothing: the first pass alone, the blocks of undecided comparisons come later (more_time).
        configs[name] = make_config(name, profile, experiment=experiment, budget_s=0.0, **given)
    main = next(iter(configs.values()))
    pace, pilot_trials = run_pilot(main, data_root)
    quoted = experiments.main()
    is_sized = {name: c.experiment == quoted.name and c.profile in quoted.verdicts_from for name, c in configs.items()}
    plan = size_first_pass(
        pace,
        [c for name, c in configs.items() if is_sized[name]],
        [c for name, c in configs.items() if not is_sized[name]],
        budget_s,
        time.monotonic() - started,
        (main.name, pilot_trials),
    )
    over = plan.blocks > plan.affordable_blocks
    fewest = " (the fewest: more than half the budget affords on this host)" if over else ""
    print(
        f"copylab: the first pass gets {plan.blocks} blocks of every deciding comparison{fewest}: the spread asks for "
        f"{plan.needed_blocks}, {plan.affordable_blocks} fit in half the budget ({plan.share_s:.0f} s); it should take "
        f"{plan.planned_s:.0f} s, and the other sweeps' first passes {plan.fixed_s:.0f} s"
        + (f" at {plan.fixed_blocks} blocks each, all the budget affords" if plan.fixed_blocks else "")
    )
    stores = []
    for name, config in configs.items():
        if is_sized[name]:
            more: dict[str, Any] = {**given, "trials": plan.blocks, "seed": config.seed}
            more["max_trials"] = max(config.max_trials, 2 * plan.blocks)
            config = make_config(name, config.profile, experiment=config.experiment, budget_s=0.0, **more)
        elif plan.fixed_blocks is not None and plan.fixed_blocks < config.trials:
            fewer: dict[str, Any] = {**given, "trials": plan.fixed_blocks, "seed": config.seed}
            config = make_config(name, config.profile, experiment=config.experiment, budget_s=0.0, **fewer)
        store = SweepStore.under(data_root, name)
        if name == main.name:
            go_on_as(store, config)
        result = sweep.run(config, store, resume=name == main.name, progress=sys.stderr.isatty() and link is None)
        print(result.summary())
        if not result.ok:
            raise NO_TRIAL_SUCCEEDED.error(experiment=config.experiment, profile=config.profile)
        stores.append(SweepStore(result.directory))
        if is_sized[name]:
            plan = dataclasses.replace(plan, took_s=time.monotonic() - started)
    took = plan.took_s or 0.0
    print(
        f"copylab: the first pass of the sweeps the answers quote took {took:.0f} s, {took / budget_s:.0%} of the "
        "budget, the verified pass and the pilot included"
    )
    return stores, skipped, plan


def more_time(stores: Sequence[SweepStore], seconds: float) -> None:
    """Spends SECONDS where the verdicts and means of STORES are still open (copylab.study.budget), best-ranked
    points first across sweeps, in up to MAX_CYCLES cycles; says where the blocks went."""
    deadline = time.monotonic() + seconds
    for cycle in range(1, MAX_CYCLES + 1):
        # An even part of what is left, so that the points are ranked again after each part (the last takes the
        # rest), or all of it when a part is too little for any sweep's start-up.
        left = deadline - time.monotonic()
        found = [item for item in map(still_open, stores) if item is not None]
        given = shares(found, left / (MAX_CYCLES - cycle + 1)) or shares(found, left)
        if not given:
            state = "nothing is open any more" if not found else "the time left buys no more blocks"
            print(f"copylab: extra blocks stop: {state}")
            return
        points = {item.store: item.points for item in found}
        where = ", ".join(f"{store.name} {fmt_num(share)} s ({points[store]} points)" for store, share in given.items())
        print(f"copylab: extra blocks, cycle {cycle}, where verdicts or means are still open: {where}")
        for store, share in given.items():
            parameters = store.read_manifest().parameters
            result = sweep.run(parameters, store, resume=True, progress=False, more_s=share)
            print(f"copylab: {store.name}: {result.ran} more trials in {fmt_num(result.wall_s)} s")


def measure(budget_s: float = REPORT_BUDGET_S, link: Link | None = None, data_root: Path = DATA) -> list[SweepStore]:
    """Builds the programs and runs every reported sweep under one budget: the first passes, then the rest of the
    time where the study's answers are still undecided.  Between the two hosts of LINK (copylab.study.link) each
    host builds its own, and the sweeps that mean nothing there are left out, said so in the report."""
    if link is None:
        build()
    started = time.monotonic()
    stamp = now_iso().replace(":", "").replace("-", "").replace("+0000", "")
    settings = link.settings(card_mtu(link)) if link is not None else {}
    runnable = [sweep for sweep in report_sweeps(stamp) if not _not_here(sweep[0], sweep[1], link)]
    verified = verified_pass(runnable, stamp, data_root, settings)
    stores, skipped, plan = first_passes(stamp, budget_s, started, link, settings, data_root)
    spent = time.monotonic() - started
    main = stores[0]
    main.write_manifest(
        dataclasses.replace(
            main.read_manifest(),
            report_sweeps=[store.name for store in stores],
            not_measured=skipped,
            verified=verified.checked,
            verified_in=verified.sweeps,
            first_pass=plan,
        )
    )
    left = f"{budget_s - spent:.0f} s are" if spent < budget_s else "no time is"
    print(
        f"copylab: the first passes of {len(stores)} sweeps took {spent:.0f} s of the {budget_s:.0f} s budget; "
        f"{left} left for the comparisons still undecided"
    )
    more_time(stores, budget_s - spent)
    return stores


def analyse(stores: Sequence[SweepStore]) -> None:
    """Analyses the sweeps whose tables are missing or stale, two side by side (each notebook in a process of its own:
    a Jupyter client is not safe across threads), which takes about the time of one."""
    stale = [store for store in stores if store.missing_tables()]
    for store in stale:
        print(f"analysing {store.directory} first (the report reads its {', '.join(store.missing_tables())})")
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(analyse_one, [store.directory for store in stale]))


def analyse_one(directory: Path) -> None:
    store = SweepStore(directory)
    notebook = run_analysis_notebook(store)
    print(f"analysis: {store.directory}/crossovers.csv, {store.figures_dir}/, {notebook}")


def render(stores: Sequence[SweepStore], out_pdf: Path, **text: str) -> Path:
    """The report of STORES as a PDF at OUT_PDF and a web page beside it (TEXT: its title and author)."""
    return render_report(stores, out_pdf, **text)


def compare(a: SweepStore, b: SweepStore, directory: Path) -> list[Path]:
    """What changed from sweep A to sweep B, written under DIRECTORY (comparison.csv, figures, a PDF); the paths."""
    result = compare_runs(a, b)
    for warning in result.warnings():
        warnings.warn(ModifiedData(warning), stacklevel=2)
    return write_comparison(result, directory)
