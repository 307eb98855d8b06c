"""A deciding comparison's verdict from one model of its whole curve.

A curve is one challenger against one baseline along an axis (message size, or connections), the other settings
fixed.  Its data are, per block (two contenders run back to back at one point of the axis), the direction-aware log
ratio of the challenger's metric to the baseline's: positive where the challenger is better.  One model is fitted to
every block of every point: a polynomial in log2 of the point (the "curve"), of the lowest degree up to MAX_DEGREE
that the point means do not depart from (chosen_degree), by weighted least squares: each block weighted by its point's
spread, shrunk towards the curve's pooled spread (_variances), and the standard errors from those spreads, because
the spread of a block differs from point to point on a noisy host and two or three blocks a point estimate it
poorly on their own.  From the fit:

- a simultaneous band (Working-Hotelling) at BAND_CONFIDENCE around the curve over the whole measured range;
- the verdict: "equivalent" when the band lies within +-EQUIVALENCE_MARGIN everywhere; else, reading the band's sign
  along the axis (better where its lower edge is above 0, worse where its upper edge is below 0), a crossover, always
  better, never better, or several crossings, as copylab.analysis.crossover.classify names them; "undecided" when
  the band decides nothing;
- the lack of fit: the means of the blocks at each point tested against the polynomial (a Wald test of the point
  means' departures from it, each mean's variance from its point's spread); it chooses the degree, and below
  FIT_LEVEL no polynomial is forced on the data: the curve runs through each point's own mean instead, straight
  between points (through_means), a model that assumes no shape;
- the crossover, where the point means, made non-decreasing, rise through 0 (straight between points), with an
  interval from drawing each point's mean again from its shrunk spread (crossover_of);
- how sure: the share of simulated second runs of the same design, drawn from the fitted curve and its uncertainty,
  that reach the same verdict (replication).  A verdict is "sure" at SURE or more.

Why these choices, and the error rates a simulation measured, are in docs/method.md.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from scipy import linalg
from scipy import stats as st
from scipy.optimize import isotonic_regression

# A difference of at most this share either way is no practical difference: a curve whose band stays inside it at
# every measured point is "equivalent".
EQUIVALENCE_MARGIN = 0.03
# The simultaneous band's confidence.  The simulation (tests/test_error_rates.py) holds it to its promise with the
# extra looks a budgeted run takes: at most 5% of curves with no difference get a verdict other than equivalent or
# undecided (docs/method.md gives the rates measured).
BAND_CONFIDENCE = 0.95
# Where the point means depart from the polynomial with a p-value below this, the curve runs through the means instead.
FIT_LEVEL = 0.01
# The highest degree of the polynomial; fewer points get a lower one (see degree_for), and the data choose the
# lowest that fits (chosen_degree).
MAX_DEGREE = 4
# A degree is enough when the point means' departures from its curve have a p-value of at least this: a looser test
# than FIT_LEVEL's, so that a curve with a bend the data show gets the degree to follow it.
SELECT_LEVEL = 0.1
# The band is read at this many points per doubling along the axis.
GRID_PER_DOUBLING = 4
# A verdict is sure when at least this share of simulated second runs reach it again.
SURE = 0.9
# The spread of one point's blocks is shrunk towards the curve's pooled spread as if that were this many blocks more.
PRIOR_BLOCKS = 3.0

# The fewest measured points whose fit can be checked (one point over the curve's parameters): a curve with fewer is
# decided by its per-point tests instead (copylab.analysis.crossover.find_crossovers).
CHECKED_POINTS = 4
DECIDED = ("crossover", "challenger_always_better", "challenger_never_better", "equivalent")
MODEL_STATUSES = (*DECIDED, "undecided", "multiple_crossings")


def last_upcrossing(log_sizes: np.ndarray, differences: np.ndarray) -> np.ndarray:
    """Log2 size of the last <=0 -> >0 sign change of each row of DIFFERENCES (rows x sizes).

    Linear interpolation between the two bracketing sizes.  A row without such a
    change gives -inf when it is > 0 at every size (the change lies below the
    first size) and +inf otherwise (not better by the last size).
    """
    differences = np.atleast_2d(differences)
    better = differences > 0
    up = ~better[:, :-1] & better[:, 1:]
    found = up.any(axis=1)
    j = up.shape[1] - 1 - np.argmax(up[:, ::-1], axis=1)
    rows = np.arange(len(differences))
    d0, d1 = differences[rows, j], differences[rows, j + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        root = log_sizes[j] + (0 - d0) * (log_sizes[j + 1] - log_sizes[j]) / (d1 - d0)
    beyond = np.where(better.all(axis=1), -np.inf, np.inf)
    return np.where(found, root, beyond)


def degree_for(points: int) -> int:
    """The polynomial's degree for a curve of POINTS measured points: up to MAX_DEGREE, leaving one point over to test
    the fit from four points on; two or three points are fitted exactly (a line, a parabola) and cannot be tested."""
    return min(MAX_DEGREE, points - 2) if points >= 4 else points - 1


def chosen_degree(x: np.ndarray, y: np.ndarray, points: np.ndarray) -> int:
    """The lowest degree, from a line up to degree_for's, whose curve the point means do not depart from at
    SELECT_LEVEL (the lack-of-fit test), else degree_for's: fewer parameters give a narrower band, and a curve
    the data show to bend keeps the degree it needs.  Fewer than CHECKED_POINTS points keep degree_for's, fitted
    exactly."""
    highest = degree_for(len(points))
    if len(points) < CHECKED_POINTS:
        return highest
    for degree in range(1, highest):
        if not _lack_of_fit(x, y, points, degree + 1) < SELECT_LEVEL:
            return degree
    return highest


@dataclass(frozen=True)
class CurveFit:
    """The model of one curve fitted to its blocks (see the module docstring)."""

    points: np.ndarray  # the measured points along the axis, ascending
    blocks: np.ndarray  # blocks at each point
    means: np.ndarray  # the mean log ratio of each point's blocks
    spreads: np.ndarray  # each point's spread, shrunk towards the pooled one (_variances)
    coefficients: np.ndarray
    covariance: np.ndarray
    lack_of_fit_p: float  # NaN when the curve is fitted exactly
    x: np.ndarray  # log2 of each block's point
    y: np.ndarray  # each block's log ratio
    multiplier: float  # the band's at BAND_CONFIDENCE (critical)
    through_means: bool = False  # the curve runs through each point's mean, straight between them (no polynomial)

    @property
    def df(self) -> int:
        """The degrees of freedom of the spreads: the blocks beyond the first at each point."""
        return int((self.blocks - 1).sum())

    @property
    def degree(self) -> int:
        return len(self.coefficients) - 1

    @property
    def grid(self) -> np.ndarray:
        """Log2 points where the band is read: GRID_PER_DOUBLING per doubling and every measured point."""
        low, high = math.log2(self.points[0]), math.log2(self.points[-1])
        steps = max(2, math.ceil((high - low) * GRID_PER_DOUBLING) + 1)
        return np.union1d(np.linspace(low, high, steps), np.log2(self.points))

    def basis(self, x: np.ndarray) -> np.ndarray:
        if self.through_means:
            return _means_basis(x, np.log2(self.points))
        low, high = math.log2(self.points[0]), math.log2(self.points[-1])
        return _basis(x, low, high, self.degree)

    def curve(self, x: np.ndarray) -> np.ndarray:
        curve: np.ndarray = self.basis(x) @ self.coefficients
        return curve

    def band(self, x: np.ndarray, confidence: float = BAND_CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
        """The curve at log2 points X and the simultaneous band's half-width there."""
        z = self.basis(x)
        se = np.sqrt(np.clip(np.einsum("gi,ij,gj->g", z, self.covariance, z), 0, None))
        multiplier = self.multiplier if confidence == BAND_CONFIDENCE else self.critical(confidence)
        return self.curve(x), multiplier * se

    def critical(self, confidence: float = BAND_CONFIDENCE) -> float:
        """The band's multiplier: the CONFIDENCE quantile of the largest |t| over the grid (simulated from the fitted
        values' correlation, at the spreads' degrees of freedom), so that the band holds at every grid point at
        once."""
        return _max_t(self.basis(self.grid), self.covariance, self.df, confidence)


def _means_basis(x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The curve through a mean at each of LEVELS, straight between them: column j is the weight of level j's mean at
    each X."""
    identity = np.eye(len(levels))
    return np.stack([np.interp(np.asarray(x, dtype=float), levels, identity[j]) for j in range(len(levels))], axis=1)


def _basis(x: np.ndarray, low: float, high: float, degree: int) -> np.ndarray:
    """Legendre polynomials of X mapped from [LOW, HIGH] to [-1, 1]: the same curve as powers, better conditioned."""
    scaled = (np.asarray(x, dtype=float) - (low + high) / 2) / max((high - low) / 2, 1e-9)
    basis: np.ndarray = np.polynomial.legendre.legvander(scaled, degree)
    return basis


# Draws behind a band's multiplier (_max_t): its Monte Carlo error, about 2%, is part of what the simulation
# calibrates.
MAX_T_DRAWS = 1000


def _max_t(z: np.ndarray, covariance: np.ndarray, df: int, confidence: float) -> float:
    """The CONFIDENCE quantile of max |t| over the rows of Z for coefficients of COVARIANCE, at DF degrees of freedom:
    the largest |z| of normal draws (with a fixed seed, so that one fit always gives one band), carried over to
    Student's t at the same tail probability."""
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.clip(values, 0, None))
    se = np.sqrt(np.clip(np.einsum("gi,ij,gj->g", z, covariance, z), 0, None))
    # Every spread has a floor (LEAST_SPREAD), so some grid point always varies; one that does not adds nothing.
    varies = se > 1e-12 * se.max()
    largest = np.abs(_standard_draws(len(covariance)) @ (z[varies] @ root).T / se[varies]).max(axis=1)
    return float(st.t.isf(st.norm.sf(np.quantile(largest, confidence)), max(df, 1)))


@functools.cache
def _standard_draws(parameters: int) -> np.ndarray:
    """MAX_T_DRAWS standard normal vectors of PARAMETERS."""
    return np.random.default_rng(parameters).standard_normal((MAX_T_DRAWS, parameters))


def fit_curve(points: np.ndarray, advantages: list[np.ndarray]) -> CurveFit | None:
    """The model fitted to ADVANTAGES[i], the log ratios of the blocks at POINTS[i] (ascending); None with fewer than
    two points or without a second block at some point to estimate a spread from."""
    kept = [(p, a) for p, a in zip(points, advantages, strict=True) if len(a)]
    if len(kept) < 2:
        return None
    points = np.array([p for p, _ in kept], dtype=float)
    values = [np.asarray(a, dtype=float) for _, a in kept]
    blocks = np.array([len(a) for a in values])
    if (blocks - 1).sum() < 1:
        return None
    x = np.repeat(np.log2(points), blocks)
    y = np.concatenate(values)
    spreads = np.sqrt(_variances(y[np.newaxis, :], blocks)[0])
    degree = chosen_degree(x, y, points)
    lack_of_fit_p = _lack_of_fit(x, y, points, degree + 1)
    # Where no polynomial fits, the curve runs through each point's own mean: it assumes no shape, and its band
    # still draws on every block through the pooled spread.
    through_means = lack_of_fit_p < FIT_LEVEL
    design = _means_basis(x, np.log2(points)) if through_means else _basis(x, x.min(), x.max(), degree)
    fitted = sm.WLS(y, design, weights=np.repeat(1 / spreads**2, blocks)).fit(
        cov_type="fixed scale", cov_kwds={"scale": 1.0}
    )
    fit = CurveFit(
        points,
        blocks,
        np.array([a.mean() for a in values]),
        spreads,
        np.asarray(fitted.params),
        np.asarray(fitted.cov_params()),
        lack_of_fit_p,
        x,
        y,
        math.nan,
        through_means,
    )
    return dataclasses.replace(fit, multiplier=fit.critical())


# A floor under a spread, as a share of the largest |log ratio|: blocks that agree exactly (synthetic ones) would
# otherwise weigh infinitely.
LEAST_SPREAD = 1e-9


def _variances(runs: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Per row of RUNS (rows x blocks, ordered by point, BLOCKS[i] at point i), each point's variance of a block,
    shrunk towards the row's pooled variance as if that were PRIOR_BLOCKS more blocks: two or three blocks alone
    estimate a spread poorly, and a point of one block has none of its own."""
    starts = np.concatenate([[0], np.cumsum(blocks)[:-1]])
    point_of_block = np.repeat(np.arange(len(blocks)), blocks)
    means = np.add.reduceat(runs, starts, axis=1) / blocks
    squares = np.add.reduceat((runs - means[:, point_of_block]) ** 2, starts, axis=1)
    dfs = (blocks - 1).astype(float)
    pooled = squares.sum(axis=1, keepdims=True) / max(dfs.sum(), 1.0)
    floor = (LEAST_SPREAD * max(float(np.abs(runs).max()), 1.0)) ** 2
    variances: np.ndarray = np.maximum((squares + PRIOR_BLOCKS * pooled) / (dfs + PRIOR_BLOCKS), floor)
    return variances


def _lack_of_fit(x: np.ndarray, y: np.ndarray, points: np.ndarray, parameters: int) -> float:
    """The p-value of the point means' departures from a polynomial of PARAMETERS coefficients: a Wald F-test of the
    contrasts of point means that every such polynomial leaves at zero, each mean's variance from its point's spread
    shrunk towards the pooled one (_variances), at the blocks' pooled degrees of freedom.  Not HC3's: with 2 or 3
    blocks a point, its variance of a mean rejected a straight truth several times as often as the level says.  NaN
    when the curve passes through every mean (no point over) or no point has a second block."""
    levels = np.log2(points)
    over = len(points) - parameters
    blocks = np.array([int((x == level).sum()) for level in levels])
    if over <= 0 or (blocks - 1).sum() < 1:
        return math.nan
    means = np.array([y[x == level].mean() for level in levels])
    # The rows of `departures` span the contrasts of point means that every polynomial of the degree leaves at zero.
    departures = linalg.null_space(_basis(levels, levels.min(), levels.max(), parameters - 1).T).T
    covariance = departures @ np.diag(_variances(y[np.newaxis, :], blocks)[0] / blocks) @ departures.T
    contrasts = departures @ means
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(contrasts @ np.linalg.solve(covariance, contrasts)) / len(departures)
    p = float(st.f.sf(statistic, len(departures), int((blocks - 1).sum())))
    return p if np.isfinite(p) else math.nan


def status_of(fit: CurveFit, confidence: float = BAND_CONFIDENCE, margin: float = EQUIVALENCE_MARGIN) -> str:
    """The curve's verdict (one of MODEL_STATUSES)."""
    curve, half = fit.band(fit.grid, confidence)
    return _band_status(curve[np.newaxis, :], half[np.newaxis, :], margin)[0]


def _band_status(curve: np.ndarray, half: np.ndarray, margin: float) -> list[str]:
    """Per row of CURVE and HALF (rows x grid points), the verdict its band gives: equivalent inside the margin,
    else its labels (B where the band is above 0, W where below) named as copylab.analysis.crossover.classify names
    them (all rows at once; tests/test_curve_model.py checks they agree), undecided where none is significant, and
    never (always) better only where the band also rules out better (worse) by more than the margin."""
    bound = math.log1p(margin)
    better, worse = curve - half > 0, curve + half < 0
    columns = np.arange(curve.shape[1])
    first_better = np.where(better, columns, curve.shape[1]).min(axis=1)
    last_worse = np.where(worse, columns, -1).max(axis=1)
    some_better, some_worse = better.any(axis=1), worse.any(axis=1)
    status = np.full(len(curve), "undecided", dtype=object)
    status[some_better & ~some_worse & np.all(curve - half > -bound, axis=1)] = "challenger_always_better"
    status[some_worse & ~some_better & np.all(curve + half < bound, axis=1)] = "challenger_never_better"
    both = some_better & some_worse
    status[both] = "multiple_crossings"
    status[both & (last_worse < first_better)] = "crossover"  # every W before every B
    status[np.all(np.abs(curve) + half < bound, axis=1)] = "equivalent"
    return [str(found) for found in status]


# The percentile levels of draws that a crossover's 95% interval is read at.  Percentile intervals of a monotone fit
# are too narrow where the curve is nearly flat around 0: read at 95%, they held the true crossing in 78-90% of the
# simulated runs (tests/error_rates.py, both designs, 2026-11-28); read at 99%, in 92-98% (docs/method.md).
CROSSOVER_LEVEL = 0.99


def crossover_of(
    fit: CurveFit, n_resamples: int = 1000, rng: np.random.Generator | None = None
) -> tuple[float, float, float]:
    """Where the measured curve rises through 0, and its 95% interval.

    The curve here is the point means made non-decreasing (_rising), straight between points on the log2 axis: a
    crossover's verdict says every "worse" lies before every "better", and a monotone curve crosses once.  The point
    rests on the measurements on either side of it, not on the polynomial: a curve of the lowest degree that fits 12
    doublings takes its shape from the far ends of the range, and moved the crossing from run to run where the means
    beside it kept their signs (docs/method.md).  The interval: percentiles (CROSSOVER_LEVEL) of the crossing of
    N_RESAMPLES draws of every point's mean from its standard error (its spread, shrunk as the fit's, over the
    square root of its blocks) at Student's t with the spreads' degrees of freedom; drawing means rather than
    resampling blocks lets a point of one block vary too.  Draws that do not cross are counted at the end of the
    range they point to, so a bound at an end of the range means "at or beyond it"."""
    rng = np.random.default_rng() if rng is None else rng
    levels = np.log2(fit.points)
    errors = fit.spreads / np.sqrt(fit.blocks)
    point = last_upcrossing(levels, _rising(fit.means[np.newaxis, :], errors))[0]
    scale = np.sqrt(fit.df / rng.chisquare(fit.df, n_resamples))
    draws = fit.means + rng.standard_normal((n_resamples, len(levels))) * errors * scale[:, np.newaxis]
    roots = last_upcrossing(levels, _rising(draws, errors))
    tail = (1 - CROSSOVER_LEVEL) / 2
    low, high = np.quantile(roots, [tail, 1 - tail], method="inverted_cdf")
    low, high, point = np.clip([low, high, point], levels[0], levels[-1])
    return float(2**point), float(2**low), float(2**high)


def _rising(means: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Each row of MEANS (rows x points) made non-decreasing along the points (isotonic regression, each mean
    weighted by the inverse square of its standard error in ERRORS)."""
    weights = errors**-2.0
    return np.array([isotonic_regression(row, weights=weights).x for row in means])


def replication(fit: CurveFit, status: str, n_runs: int = 200, seed: int = 0) -> float:
    """The share of N_RUNS simulated second runs that reach STATUS again.  Each draws a true curve from the fit's
    estimate and its uncertainty, then the same blocks at the same points around it with each point's spread, fits
    it as fit_curve does (its own spreads, the same degree) and gives that run's verdict by the same band; the
    uncertainty of the first run thus counts, as a redraw of its own blocks would not."""
    rng = np.random.default_rng(seed)
    design = fit.basis(fit.x)
    truths = rng.multivariate_normal(fit.coefficients, fit.covariance, size=n_runs, method="eigh")
    noise = rng.standard_normal((n_runs, len(fit.y))) * np.repeat(fit.spreads, fit.blocks)
    runs = truths @ design.T + noise
    coefficients, covariances = _weighted_fits(design, runs, fit.blocks)
    z = fit.basis(fit.grid)
    half = fit.multiplier * np.sqrt(np.clip(np.einsum("gi,rij,gj->rg", z, covariances, z), 0, None))
    again = _band_status(coefficients @ z.T, half, EQUIVALENCE_MARGIN)
    return sum(found == status for found in again) / n_runs


def _weighted_fits(design: np.ndarray, runs: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every row of RUNS against DESIGN at once, fit_curve's fit: the coefficients and their covariance from
    the row's own shrunk spreads (what statsmodels' WLS gives one row at a time; tests/test_curve_model.py checks
    they agree)."""
    weights = 1 / np.repeat(_variances(runs, blocks), blocks, axis=1)
    covariances = np.linalg.inv(np.einsum("rn,ni,nj->rij", weights, design, design))
    coefficients = np.einsum("rij,rj->ri", covariances, np.einsum("rn,ni,rn->ri", weights, design, runs))
    return coefficients, covariances


@dataclass(frozen=True)
class Assessment:
    """What the model says of one curve: its verdict and everything a reader or the allocator asks of it."""

    fit: CurveFit
    status: str  # one of MODEL_STATUSES
    replication: float  # the share of simulated second runs that reach the same verdict (replication); NaN if open
    crossover: tuple[float, float, float]  # where, and its interval; NaN unless a crossover
    largest_difference: float  # the largest share either way the band allows over the range: within it, equivalent
    more_blocks: float  # about how many more blocks would decide an open verdict, if the curve stays as fitted
    decide_at: float  # the measured point where the band is widest for what it must decide

    @property
    def sure(self) -> bool:
        return self.status in DECIDED and self.replication >= SURE


def assess(
    points: np.ndarray, advantages: list[np.ndarray], seed: int = 0, n_resamples: int = 1000
) -> Assessment | None:
    """The model's verdict on a curve (ADVANTAGES[i]: the direction-aware log ratios of the blocks at POINTS[i]), how
    sure it is, its crossover and what would decide it; None when the curve cannot be fitted (fit_curve)."""
    fit = fit_curve(np.asarray(points), advantages)
    if fit is None:
        return None
    status = status_of(fit)
    curve, half = fit.band(fit.grid)
    largest = float(np.expm1(np.max(np.abs(curve) + half)))
    crossing = (
        crossover_of(fit, n_resamples=n_resamples, rng=np.random.default_rng(seed))
        if status == "crossover"
        else (math.nan, math.nan, math.nan)
    )
    replicated = replication(fit, status, seed=seed) if status in DECIDED else math.nan
    more, where = _to_decide(fit, curve, half)
    return Assessment(fit, status, replicated, crossing, largest, more, where)


def _to_decide(fit: CurveFit, curve: np.ndarray, half: np.ndarray) -> tuple[float, float]:
    """About how many more blocks, spread like the measured ones, would narrow the band enough for a verdict at every
    grid point (inside the margin, or clear of 0, whichever is nearer), and the measured point nearest to where the
    band is widest for that; the band narrows with the square root of the blocks."""
    room = np.maximum(math.log1p(EQUIVALENCE_MARGIN) - np.abs(curve), np.abs(curve))
    factor = (half / room) ** 2
    if not np.isfinite(factor).all():
        return math.inf, float(fit.points[0])
    widest = fit.grid[int(np.argmax(factor))]
    nearest = float(fit.points[int(np.argmin(np.abs(np.log2(fit.points) - widest)))])
    return float(max(0.0, np.ceil(len(fit.y) * (factor.max() - 1)))), nearest
