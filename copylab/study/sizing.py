"""./inv report's first pass sized from this host, before it runs.

A pilot runs the first FEWEST_BLOCKS blocks of the main sweep's deciding contenders at four of its points: the
sizes either side of the middle of its range, at its fewest and most threads.  The first pass does not run them
again, so the pilot costs a sweep's start-up and nothing else.  Its rows give this host's time per trial (the median
trial's wall time: warm-up, window and the harness around them) and the per-block spread of the deciding
comparisons (copylab.analysis.noise.block_spread, pooled).

The first pass of the sweeps whose verdicts the study's answers quote (the main experiment's verdicts_from) then
gets the blocks that spread asks for: enough that the mean log ratio of a curve over its sizes has a 95% interval
within MARGIN either side, (copylab.analysis.noise.needed_blocks).  It gets
no more than fit in FIRST_PASS_SHARE of the budget with the verified pass and the pilot, at this host's time per
trial and a sweep's start-up as the pilot measured them.  A noisy host thus gets a larger first pass than a quiet
one, both within the share.  The other sweeps (fixed designs that answer from their means) and the blocks that go
where an answer is still open (copylab.study.budget) share the rest.  Nothing here is tuned on a host: the margin is
the verdicts', the rest is measured.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from copylab.analysis.noise import FEWEST_BLOCKS, block_spread, needed_blocks, pooled
from copylab.declarations.config import make_config
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure import sweep
from copylab.measure.planning.budgeted import first_pass_configurations
from copylab.measure.planning.schedule import by_point, configurations
from copylab.paths import DATA
from copylab.record.manifest import FirstPass
from copylab.record.store import SweepStore

FIRST_PASS_SHARE = 0.5  # of the report's budget: the rest goes where an answer is still open


@dataclass(frozen=True)
class HostPace:
    """What the pilot measured on this host."""

    spread: float  # per-block standard deviation of the deciding comparisons' log ratios, pooled
    degrees: int
    trial_s: float  # a trial's median wall time
    window_s: float  # the pilot's warm-up and window, which trial_s includes
    start_up_s: float  # a sweep's time besides its trials

    def trial_s_of(self, config: SweepConfig) -> float:
        """What a trial of CONFIG is expected to take here: its own warm-up and window, and the harness's time
        around a trial as the pilot measured it."""
        return config.warmup_s + config.duration_s + max(self.trial_s - self.window_s, 0.0)


def block_trials(config: SweepConfig) -> int:
    """The trials of one block of CONFIG's first pass, over every point (copylab.measure.planning.budgeted)."""
    first = first_pass_configurations(config, by_point(configurations(config)))
    return sum(len(contenders) for contenders in first.values())


def _fixed_s(pace: HostPace, fixed: Sequence[SweepConfig], blocks: int | None) -> float:
    """What FIXED's first passes take on a host of PACE: their profiles' blocks, or at most BLOCKS."""
    return sum(
        min(config.trials, blocks or config.trials) * block_trials(config) * pace.trial_s_of(config) + pace.start_up_s
        for config in fixed
    )


def size_first_pass(
    pace: HostPace,
    sized: Sequence[SweepConfig],
    fixed: Sequence[SweepConfig],
    budget_s: float,
    spent_s: float,
    pilot: tuple[str, int],
) -> FirstPass:
    """The first pass of SIZED (the sweeps whose verdicts the answers quote) on a host of PACE, SPENT_S of BUDGET_S
    gone already (the verified pass and the pilot); FIXED's first passes are paid from the rest: their profiles'
    blocks where the budget affords them after SIZED's, else FEWEST_BLOCKS, so that a slow host's first passes stay
    within the budget.  PILOT: the pilot's sweep and its trials, the first FEWEST_BLOCKS blocks of some of SIZED[0]'s
    points."""
    name, pilot_trials = pilot
    share = FIRST_PASS_SHARE * budget_s
    per_block = sum(block_trials(config) * pace.trial_s_of(config) for config in sized)
    # the pilot's blocks are the first of SIZED[0]'s: its trials are not run again
    reused_s = pilot_trials * pace.trial_s_of(sized[0])
    left = share - spent_s - pace.start_up_s * len(sized) + reused_s
    affordable = max(math.floor(left / per_block), 0) if per_block > 0 else FEWEST_BLOCKS
    needed = needed_blocks(pace.spread, min(len(config.sizes) for config in sized))
    blocks = max(FEWEST_BLOCKS, min(needed, affordable))
    planned = spent_s + pace.start_up_s * len(sized) + blocks * per_block - reused_s
    fixed_blocks = None if planned + _fixed_s(pace, fixed, None) <= budget_s else FEWEST_BLOCKS
    return FirstPass(
        pilot=name,
        pilot_trials=pilot_trials,
        spread=pace.spread,
        degrees=pace.degrees,
        trial_s=pace.trial_s,
        start_up_s=pace.start_up_s,
        needed_blocks=needed,
        affordable_blocks=affordable,
        blocks=blocks,
        share_s=share,
        planned_s=planned,
        fixed_s=_fixed_s(pace, fixed, fixed_blocks),
        fixed_blocks=fixed_blocks,
    )


def pilot_config(main: SweepConfig) -> SweepConfig:
    """The pilot of the main sweep MAIN: its first FEWEST_BLOCKS blocks of its deciding contenders, receiving by copy
    in the study's layout, at the sizes either side of the middle of its range (none of its side sizes, where the
    first pass puts other contenders in the same blocks), at its fewest and most threads; with its seed, so that
    those blocks run in the order the first pass would give them."""
    experiment = main.declared
    deciding = {member.name for pair in main.deciding for member in pair}
    names = [name for name in main.implementations if name in deciding]
    inner = [size for size in main.sizes if size not in main.side_sizes] or list(main.sizes)
    middle = math.sqrt(min(main.sizes) * max(main.sizes))
    below = [size for size in inner if size <= middle] or inner[:1]
    above = [size for size in inner if size > middle] or inner[-1:]
    settings: dict[str, Any] = {
        "implementations": names,
        "workloads": [experiment.workload],
        "sizes": sorted({below[-1], above[0]}),
        "side_sizes": [],
        "threads": sorted({min(main.threads), max(main.threads)}),
        "receive": ["copy"],
        "trials": FEWEST_BLOCKS,
        "budget_s": None,
        "calibrate": False,  # the first pass calibrates once it goes on in the same sweep
        "seed": main.seed,
    }
    return make_config(main.name, main.profile, experiment=main.experiment, **settings)


def pace_of(store: SweepStore, wall_s: float) -> HostPace:
    """This host's pace from the pilot's rows in STORE, which took WALL_S in all."""
    config = store.read_manifest().parameters
    rows = store.recorded_trials()
    ok = rows[rows["status"] == "ok"]
    experiment = config.declared
    pairs = [(challenger.name, baseline.name) for challenger, baseline in config.deciding]
    spread, degrees = pooled(block_spread(ok, pairs, experiment.metric, experiment.axis))
    trials_s = float(pd.to_numeric(rows["trial_wall_s"]).sum()) if len(rows) else 0.0
    trial_s = float(pd.to_numeric(rows["trial_wall_s"]).median()) if len(rows) else math.nan
    window = config.warmup_s + config.duration_s
    return HostPace(spread, degrees, trial_s if math.isfinite(trial_s) else window, window, max(wall_s - trials_s, 0.0))


def run_pilot(main: SweepConfig, data_root: Path = DATA) -> tuple[HostPace, int]:
    """Runs the pilot of MAIN in MAIN's own sweep directory under DATA_ROOT; this host's pace and the pilot's
    trials."""
    started = time.monotonic()
    pilot = pilot_config(main)
    result = sweep.run(pilot, SweepStore.under(data_root, pilot.name), progress=False)
    took = time.monotonic() - started
    pace = pace_of(SweepStore(result.directory), took)
    print(
        f"copylab: pilot ({result.ran} trials in {took:.0f} s): a trial takes {pace.trial_s:.2f} s here"
        f" and the deciding comparisons spread {pace.spread:.3f} per block ({pace.degrees} degrees of freedom)"
    )
    return pace, result.ran


def go_on_as(store: SweepStore, config: SweepConfig) -> None:
    """Makes the sweep in STORE, which the pilot began, the first pass CONFIG: resumed, the pilot's trials stay."""
    store.write_manifest(dataclasses.replace(store.read_manifest(), parameters=config))
