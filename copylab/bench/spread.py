"""Small sweeps on the bench's namespaces that show how precise a measurement is: the blocked against the
randomized design, a short against a long window, and the default transport against the host's choices."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import experiments
from copylab.bench.figure import BenchFigure
from copylab.declarations import config, implementations
from copylab.declarations.settings import get as setting
from copylab.error_catalogue import BENCH_SWEEP_FAILED
from copylab.measure import sweep
from copylab.record.store import SweepStore
from copylab.roles import Role
from copylab.testbeds import congestion


def _measured(name: str, data_root: Path, smoke: bool, **settings: Any) -> pd.DataFrame:
    """A small sweep on the bench's own namespaces, its trials with copylab.declarations.metrics' columns.  No part
    reads its calibration, which would cost each sweep about 10 s; SMOKE also leaves the kernel's copies uncounted
    (attaching bpftrace costs each sweep a second)."""
    from copylab.declarations.metrics import add_metrics

    settings["calibrate"] = False
    if smoke:
        settings["kernel_copies"] = False
        # windows as short as run at all, where the part does not choose its own
        settings = {"duration_s": 0.1, "warmup_s": 0.05, **settings}
    config_ = config.make_config(name, "quick", namespaces=["copylab_bsrv", "copylab_bcli"], **settings)
    result = sweep.run(config_, SweepStore.under(data_root, config_.name), progress=False)
    if result.failed:
        raise BENCH_SWEEP_FAILED.error(name=name, failure=result.failures[0])
    return add_metrics(SweepStore(result.directory).load()[0])


def _deciding(trials: pd.DataFrame, paired: bool) -> pd.DataFrame:
    """The copies experiment's deciding comparisons on throughput, per size."""
    from copylab.analysis.stats import compare

    pairs = implementations.deciding_pairs(experiments.main())
    found = compare(trials, pairs, ["throughput_gbps"], paired=paired)
    return found.set_index(["challenger", "size_bytes"]).sort_index()


def design_comparison(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The blocked and the randomized design on this host, at an equal number of trials, each twice: how wide
    the deciding ratios' intervals are, and whether two runs of a design reach the same verdicts."""
    trials = 2 if smoke else 8
    grid = dict(
        implementations=list(
            dict.fromkeys(name for pair in implementations.deciding_pairs(experiments.main()) for name in pair)
        ),
        workloads=["stream"],
        sizes=[65536] if smoke else [1024, 16384, 65536],
        threads=[1],
        receive=["copy"],
        trials=trials,
    )
    figures = []
    for design in ("blocked", "randomized"):
        runs = [
            _deciding(
                _measured(f"bench-{design}-{run}", data_root, smoke, design=design, seed=run, **grid),
                design == "blocked",
            )
            for run in (1, 2)
        ]
        bounds = [bound for run in runs for bound in zip(run["ratio_ci_low"], run["ratio_ci_high"], strict=True)]
        # With few trials Fieller's interval may be unbounded (the baseline's mean not clear of zero): counted apart.
        widths = [math.log(high / low) for low, high in bounds if low > 0 and math.isfinite(high)]
        unbounded = len(bounds) - len(widths)
        verdicts = [run["significant"].astype(str) + run["challenger_better"].astype(str) for run in runs]
        same = int((verdicts[0] == verdicts[1]).sum())
        figures.append(
            BenchFigure(
                f"{design} design, {trials} trials each: width of the deciding ratios' 95% intervals (log ratio, "
                "median over comparisons)",
                "report",
                (
                    f"{statistics.median(widths):.3f} (range {min(widths):.3f}-{max(widths):.3f} over {len(widths)})"
                    if widths
                    else "no bounded interval"
                )
                + (f"; {unbounded} unbounded" if unbounded else ""),
                None,
            )
        )
        figures.append(
            BenchFigure(
                f"{design} design: the same verdict from two runs",
                "report",
                f"{same} of {len(verdicts[0])} comparisons (significant and direction alike)",
                None,
            )
        )
    return figures


def window_spread(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The spread between identical trials with a short and a long window: what a longer window averages away."""
    figures = []
    baseline = implementations.by_role(Role.TWO_COPY)
    assert baseline is not None
    for duration, warmup in ((0.2, 0.1), (0.5, 0.2)):
        trials = _measured(
            f"bench-window-{duration}",
            data_root,
            smoke,
            implementations=[baseline.name],
            workloads=["stream"],
            sizes=[65536],
            threads=[1],
            receive=["copy"],
            trials=3 if smoke else 16,
            duration_s=duration,
            warmup_s=warmup,
        )
        values = trials.loc[trials["status"] == "ok", "throughput_gbps"]
        figures.append(
            BenchFigure(
                f"spread between identical trials ({baseline.name}, 64 KiB), {duration:g} s window after {warmup:g} s",
                "report",
                f"CV {values.std() / values.mean():.1%} over {len(values)} trials, "
                f"{trials['trial_wall_s'].median():.2f} s per trial",
                None,
            )
        )
    return figures


# The congestion control that paces by a timer, which the default is held against (docs/method.md: Why cubic).
PACED_CONGESTION = "bbr"


def _transports() -> list[tuple[str, dict[str, Any]]]:
    """The default transport, and each of its settings changed to what the host would choose: a pacing
    congestion control, socket buffers the kernel sizes as a connection goes (docs/method.md: The socket buffers)."""
    default = setting("congestion_control").default
    return [
        (f"congestion control {default}, socket buffers copylab's", {"congestion_control": default}),
        (f"congestion control {PACED_CONGESTION}, socket buffers copylab's", {"congestion_control": PACED_CONGESTION}),
        (
            f"congestion control {default}, socket buffers the kernel's",
            {"congestion_control": default, "socket_buffer": 0},
        ),
    ]


def transport_spread(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The study's two copying senders under the default transport and under each change of it the kernel
    offers: each's throughput and spread between identical trials, and their within-block ratio."""
    one_copy, two_copy = implementations.by_role(Role.ONE_COPY), implementations.by_role(Role.TWO_COPY)
    assert one_copy is not None and two_copy is not None
    figures = []
    for number, (label, transport) in enumerate(_transports()):
        refused = congestion.check_here(transport["congestion_control"])
        if refused:
            figures.append(BenchFigure(label, "report", refused, None))
            continue
        trials = _measured(
            f"bench-transport-{number}",
            data_root,
            smoke,
            implementations=[two_copy.name, one_copy.name],
            workloads=["stream"],
            sizes=[16384] if smoke else [1024, 16384, 65536, 262144],
            threads=[1],
            receive=["copy"],
            trials=2 if smoke else 8,
            **transport,
        )
        ok = trials[trials["status"] == "ok"]
        for size, group in ok.groupby("size_bytes"):
            stats = group.groupby("implementation")["throughput_gbps"].agg(["mean", "std"])
            cv = stats["std"] / stats["mean"]
            blocks = group.pivot_table(index="repetition", columns="implementation", values="throughput_gbps")
            log_ratios = (blocks[one_copy.name] / blocks[two_copy.name]).apply(math.log)
            figures.append(
                BenchFigure(
                    f"{label}, {size // 1024} KiB, 1 thread, {len(blocks)} blocks: throughput (CV between identical "
                    f"trials); {one_copy.name}/{two_copy.name} within blocks",
                    "report",
                    "; ".join(
                        f"{name} {stats.loc[name, 'mean']:.1f} Gbit/s (CV {cv[name]:.0%})"
                        for name in (two_copy.name, one_copy.name)
                    )
                    + f"; {math.exp(log_ratios.mean()):.2f}x, log-ratio SD {log_ratios.std():.3f}",
                    None,
                )
            )
    return figures
