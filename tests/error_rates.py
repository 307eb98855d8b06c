"""How often copylab's verdicts on a curve are wrong, and how often "sure" ones come out again: a simulation.

Each simulated run measures one curve (a challenger against its baseline) in a Design: a first pass of its first
blocks at every one of its sizes, then rounds of a block at each point the allocator asks for
(copylab.measure.planning.allocation.wanted_points, new sizes included), until its extra blocks are spent or it asks
for none; then the verdict as the report gives it (copylab.analysis.curve_model.assess).  Two designs: the one the
method was developed on (13 sizes 2x apart, a third of the blocks in the first pass), and ./inv report's main sweep on
a host where the first pass gets the fewest blocks and the budget leaves nothing after it.
The blocks are synthetic (tests/synthetic.py): a known true log ratio plus a normal spread per block.

    .venv/bin/python -m tests.error_rates [RUNS]     # the tables of docs/method.md, RUNS simulated runs per scenario
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from copylab.analysis.curve_model import DECIDED, assess
from copylab.analysis.deciding import curve_of
from copylab.analysis.noise import FEWEST_BLOCKS
from copylab.experiments.copies import REPORT_SIZES
from copylab.measure.planning.allocation import wanted_points
from tests.synthetic import SIZES, block_log_ratios, crossing_log_ratio


@dataclass(frozen=True)
class Design:
    name: str
    sizes: tuple[int, ...]
    first_blocks: int
    extra_blocks: int


# The design the method was developed on: 13 sizes, 3 blocks, then twice as many again, so the first takes a third.
DEVELOPED = Design("13 sizes 2x apart, 3 blocks each, then 78 more", SIZES, 3, 2 * 3 * len(SIZES))
# ./inv report's main sweep where the host affords only the fewest blocks and no extra one.
REPORT_LEAST = Design(
    f"the report's {len(REPORT_SIZES)} sizes 4x apart, {FEWEST_BLOCKS} blocks each, no more",
    tuple(REPORT_SIZES),
    FEWEST_BLOCKS,
    0,
)
MOST_BLOCKS = 20  # a point's blocks at most (quick's max_trials)
# The per-block spreads the scenarios cover: from a quiet host's to a shared VM's at four threads.
LEAST_SPREAD, MOST_SPREAD = 0.02, 0.15
WRONG_WHEN_NONE = ("crossover", "challenger_always_better", "challenger_never_better", "multiple_crossings")


@dataclass(frozen=True)
class Scenario:
    name: str
    truth: Callable[[float], float]  # the true log ratio at a size
    spread: float | None  # the per-block spread at every size, or None: drawn per size between the extremes
    crossing: float | None = None  # where the truth crosses 0, if it does


def no_difference(size: float) -> float:
    return 0.0


def crossing_at_16k(size: float) -> float:
    return crossing_log_ratio(size, 16384.0, 0.05)


NULL_SCENARIOS = (
    Scenario("no difference, spread 0.02", no_difference, 0.02),
    Scenario("no difference, spread 0.07", no_difference, 0.07),
    Scenario("no difference, spread 0.15", no_difference, 0.15),
    Scenario("no difference, spread 0.02-0.15 by size", no_difference, None),
)
POWER_SCENARIO = Scenario("±5% crossing at 16 KiB, spread 0.07", crossing_at_16k, 0.07, 16384.0)


def crossing_like_measured(size: float) -> float:
    """One_copy against two_copy as a noisy host measured it: about 8% slower at small sizes, 8% faster at large
    ones, crossing at 12 KiB (between the 7-17 KiB that issue 52's runs read from the fitted curve)."""
    return crossing_log_ratio(size, 12288.0, 0.08)


# ./inv report's curves at each thread count, with the per-block spread a shared 2-vCPU VM measured there.
THREAD_SPREADS = {1: 0.07, 2: 0.1, 4: 0.2, 8: 0.2}
THREAD_SCENARIOS = {
    threads: Scenario(f"{threads} thread(s): ±8% crossing at 12 KiB, spread {spread}", crossing_like_measured, spread)
    for threads, spread in THREAD_SPREADS.items()
}
# The report's main sweep: its first pass of FEWEST_BLOCKS per size, and the same with as many blocks again from the
# budget, every one of them where the allocator asks.
REPORT_FIRST = Design(f"{FEWEST_BLOCKS} blocks per size", tuple(REPORT_SIZES), FEWEST_BLOCKS, 0)
REPORT_BUDGETED = Design(
    f"{FEWEST_BLOCKS} blocks per size, then as many again",
    tuple(REPORT_SIZES),
    FEWEST_BLOCKS,
    FEWEST_BLOCKS * len(REPORT_SIZES),
)
WRONG_WHEN_CROSSING = ("challenger_always_better", "challenger_never_better", "equivalent")


@dataclass(frozen=True)
class Outcome:
    status: str
    sure: bool
    crossover: tuple[float, float, float]
    blocks: int
    points: int


def run_once(scenario: Scenario, rng: np.random.Generator, design: Design = DEVELOPED) -> Outcome:
    """One budgeted run of the curve of SCENARIO in DESIGN, to its verdict."""
    spreads = _spreads(scenario, rng, design.sizes)
    data = {
        int(size): block_log_ratios(scenario.truth(size), spreads(size), design.first_blocks, rng)
        for size in design.sizes
    }
    spent = 0
    while spent < design.extra_blocks:
        points = np.array(sorted(data))
        wanted = wanted_points(curve_of(points, [data[p] for p in points], 0), MOST_BLOCKS)
        if not wanted:
            break
        for _, point in wanted[: design.extra_blocks - spent]:
            new = block_log_ratios(scenario.truth(point), spreads(point), 1, rng)
            data[point] = np.concatenate([data.get(point, np.empty(0)), new])
            spent += 1
    points = np.array(sorted(data))
    found = assess(points, [data[p] for p in points], n_resamples=400)
    assert found is not None
    return Outcome(found.status, found.sure, found.crossover, sum(map(len, data.values())), len(points))


def _spreads(scenario: Scenario, rng: np.random.Generator, sizes: tuple[int, ...]) -> Callable[[float], float]:
    """The spread at a size: the scenario's, or one drawn log-uniformly per measured size and interpolated on log2
    size for a new one."""
    if scenario.spread is not None:
        fixed = scenario.spread
        return lambda size: fixed
    drawn = np.exp(rng.uniform(np.log(LEAST_SPREAD), np.log(MOST_SPREAD), len(sizes)))
    return lambda size: float(np.interp(np.log2(size), np.log2(sizes), drawn))


@dataclass(frozen=True)
class Rates:
    scenario: str
    runs: int
    hits: int  # wrong verdicts under no difference, or right crossovers under a crossing
    sure: int  # sure verdicts of the first runs
    sure_again: int  # of those, how many an independent second run reaches again
    seconds: float
    crossovers: int = 0  # crossovers found where the truth crosses
    covered: int = 0  # of those, how many intervals hold the true crossing

    @property
    def rate(self) -> float:
        return self.hits / self.runs

    def interval(self) -> tuple[float, float]:
        """The 95% Clopper-Pearson interval of the rate."""
        found = st.binomtest(self.hits, self.runs).proportion_ci(0.95, method="exact")
        return float(found.low), float(found.high)


def simulate(
    scenario: Scenario,
    runs: int,
    seed: int = 0,
    hit: Callable[[Outcome], bool] | None = None,
    design: Design = DEVELOPED,
) -> Rates:
    """RUNS pairs of independent runs of SCENARIO in DESIGN: the first's verdicts counted by HIT (by default, wrong
    under no difference), and how often the second reaches each sure verdict of the first again."""
    hit = hit or (lambda outcome: outcome.status in WRONG_WHEN_NONE)
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    hits = sure = again = crossovers = covered = 0
    for _ in range(runs):
        first = run_once(scenario, rng, design)
        hits += hit(first)
        if first.sure:
            sure += 1
            again += run_once(scenario, rng, design).status == first.status
        if scenario.crossing is not None and first.status == "crossover":
            crossovers += 1
            covered += first.crossover[1] <= scenario.crossing <= first.crossover[2]
    name = scenario.name if design is DEVELOPED else f"{scenario.name}; {design.name}"
    return Rates(name, runs, hits, sure, again, time.perf_counter() - started, crossovers, covered)


def crossover_found(outcome: Outcome) -> bool:
    return outcome.status == "crossover"


@dataclass(frozen=True)
class Decided:
    """How often one thread count's curve is decided in a design, and how often a decided one repeats."""

    scenario: str
    runs: int
    decided: int  # verdicts of the first runs that decide (curve_model.DECIDED)
    wrong: int  # of those, verdicts the crossing truth contradicts (WRONG_WHEN_CROSSING)
    again: int  # decided verdicts an independent second run reaches again


def decided_rate(scenario: Scenario, runs: int, design: Design, seed: int = 0) -> Decided:
    """RUNS pairs of independent runs of SCENARIO in DESIGN: how many first runs decide, how many of those decide
    wrongly, and how many the second run repeats."""
    rng = np.random.default_rng(seed)
    decided = wrong = again = 0
    for _ in range(runs):
        first = run_once(scenario, rng, design)
        if first.status in DECIDED:
            decided += 1
            wrong += first.status in WRONG_WHEN_CROSSING
            again += run_once(scenario, rng, design).status == first.status
    return Decided(f"{scenario.name}; {design.name}", runs, decided, wrong, again)


def thread_table(runs: int) -> str:
    """The markdown table of docs/method.md's decided rates: per thread count and design, the share decided, wrong
    and repeated."""
    lines = ["| curve | runs | decided | wrong | decided and repeated |", "|---|---|---|---|---|"]
    for design in (REPORT_FIRST, REPORT_BUDGETED):
        for threads, scenario in THREAD_SCENARIOS.items():
            r = decided_rate(scenario, runs, design, seed=threads)
            repeated = f"{r.again / r.decided:.0%} of {r.decided}" if r.decided else "none decided"
            lines.append(
                f"| {r.scenario} | {r.runs} | {r.decided / r.runs:.0%} | {r.wrong / r.runs:.1%} | {repeated} |"
            )
    return "\n".join(lines)


def table(runs: int) -> str:
    """The markdown table of docs/method.md: per scenario, the rate with its interval and the calibration of sure."""
    lines = [
        "| scenario | runs | wrong verdicts (none) / crossover found (crossing) | 95% interval | sure | same again "
        "| interval holds the crossing |",
        "|---|---|---|---|---|---|---|",
    ]
    results = []
    for design in (DEVELOPED, REPORT_LEAST):
        results += [simulate(s, runs, seed, design=design) for seed, s in enumerate(NULL_SCENARIOS)]
        results.append(simulate(POWER_SCENARIO, runs, 99, crossover_found, design))
    for r in results:
        low, high = r.interval()
        again = f"{r.sure_again / r.sure:.1%} of {r.sure}" if r.sure else "none sure"
        covered = f"{r.covered / r.crossovers:.1%} of {r.crossovers}" if r.crossovers else "—"
        lines.append(
            f"| {r.scenario} | {r.runs} | {r.rate:.1%} | {low:.1%}-{high:.1%} | {r.sure / r.runs:.0%} | {again} "
            f"| {covered} |"
        )
    seconds = sum(r.seconds for r in results)
    return "\n".join(lines) + f"\n\n({sum(r.runs for r in results)} runs and their second runs in {seconds:.0f} s.)"


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    print(table(runs), thread_table(runs), sep="\n\n")
