"""How often copylab's verdicts on a curve are wrong, and how often "sure" ones come out again: a simulation.

Each simulated run measures one curve (a challenger against its baseline at the 13 sizes from 64 B to 256 KiB) as a
budgeted ./inv report does: a first pass of FIRST_BLOCKS blocks at every size, then rounds of a block at each point the
allocator asks for (copylab.measure.planning.allocation.wanted_points, new sizes included), until EXTRA_BLOCKS more
blocks are spent or it asks for none; then the verdict as the report gives it (copylab.analysis.curve_model.assess).
The blocks are synthetic (tests/synthetic.py): a known true log ratio plus a normal spread per block.

    .venv/bin/python -m tests.error_rates [RUNS]     # the table of docs/method.md, RUNS simulated runs per scenario
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from copylab.analysis.curve_model import assess
from copylab.measure.planning.allocation import wanted_points
from tests.synthetic import SIZES, block_log_ratios, crossing_log_ratio

FIRST_BLOCKS = 3
# The extra blocks one curve gets after its first pass: twice the first pass, so that the first takes a third.
EXTRA_BLOCKS = 2 * FIRST_BLOCKS * len(SIZES)
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


@dataclass(frozen=True)
class Outcome:
    status: str
    sure: bool
    crossover: tuple[float, float, float]
    blocks: int
    points: int


def run_once(scenario: Scenario, rng: np.random.Generator) -> Outcome:
    """One budgeted run of the curve of SCENARIO, to its verdict."""
    spreads = _spreads(scenario, rng)
    data = {int(size): block_log_ratios(scenario.truth(size), spreads(size), FIRST_BLOCKS, rng) for size in SIZES}
    spent = 0
    while spent < EXTRA_BLOCKS:
        points = np.array(sorted(data))
        wanted = wanted_points(points, [data[p] for p in points], MOST_BLOCKS)
        if not wanted:
            break
        for _, point in wanted[: EXTRA_BLOCKS - spent]:
            new = block_log_ratios(scenario.truth(point), spreads(point), 1, rng)
            data[point] = np.concatenate([data.get(point, np.empty(0)), new])
            spent += 1
    points = np.array(sorted(data))
    found = assess(points, [data[p] for p in points], n_resamples=400)
    assert found is not None
    return Outcome(found.status, found.sure, found.crossover, sum(map(len, data.values())), len(points))


def _spreads(scenario: Scenario, rng: np.random.Generator) -> Callable[[float], float]:
    """The spread at a size: the scenario's, or one drawn log-uniformly per measured size and interpolated on log2
    size for a new one."""
    if scenario.spread is not None:
        fixed = scenario.spread
        return lambda size: fixed
    drawn = np.exp(rng.uniform(np.log(LEAST_SPREAD), np.log(MOST_SPREAD), len(SIZES)))
    return lambda size: float(np.interp(np.log2(size), np.log2(SIZES), drawn))


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


def simulate(scenario: Scenario, runs: int, seed: int = 0, hit: Callable[[Outcome], bool] | None = None) -> Rates:
    """RUNS pairs of independent runs of SCENARIO: the first's verdicts counted by HIT (by default, wrong under no
    difference), and how often the second reaches each sure verdict of the first again."""
    hit = hit or (lambda outcome: outcome.status in WRONG_WHEN_NONE)
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    hits = sure = again = crossovers = covered = 0
    for _ in range(runs):
        first = run_once(scenario, rng)
        hits += hit(first)
        if first.sure:
            sure += 1
            again += run_once(scenario, rng).status == first.status
        if scenario.crossing is not None and first.status == "crossover":
            crossovers += 1
            covered += first.crossover[1] <= scenario.crossing <= first.crossover[2]
    return Rates(scenario.name, runs, hits, sure, again, time.perf_counter() - started, crossovers, covered)


def crossover_found(outcome: Outcome) -> bool:
    return outcome.status == "crossover"


def table(runs: int) -> str:
    """The markdown table of docs/method.md: per scenario, the rate with its interval and the calibration of sure."""
    lines = [
        "| scenario | runs | wrong verdicts (none) / crossover found (crossing) | 95% interval | sure | same again "
        "| interval holds the crossing |",
        "|---|---|---|---|---|---|---|",
    ]
    results = [simulate(s, runs, seed) for seed, s in enumerate(NULL_SCENARIOS)]
    results.append(simulate(POWER_SCENARIO, runs, 99, crossover_found))
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
    print(table(int(sys.argv[1]) if len(sys.argv) > 1 else 400))
