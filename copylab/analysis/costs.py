"""A cost model fitted to every trial: an implementation's CPU time in a window as a sum of costs per unit of work.

For each implementation and side (sender, receiver, both), the CPU time of a trial's window (user + sys, ns) is
modelled as

    cpu_ns = per_byte * bytes + per_send * sends + per_segment * iovec segments + per_page * pages pinned
             + per_skb * skbs + per_completion * completions read

with non-negative costs (scipy's NNLS: a cost is never below zero), fitted across every stream trial of the
sweep that receives by copy (every size, thread count and message layout, so that bytes, sends, segments and
pages move apart).  Only the terms the data can tell apart are kept: taken in order, a term joins the model when
it is measured and not all zero, and the model's columns (each scaled to unit length) stay well conditioned
with it (condition number below CONDITION_LIMIT); a term left out says which kept term it moves with.  The
intervals come from resampling blocks: a blocked sweep's block (its trials' repetition) runs every configuration
back to back, so a resample draws whole blocks with replacement and fits again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from copylab.vocabulary.implementation import Implementation
from copylab.vocabulary.limits import FIELD_COUNT

# The terms in the order they are offered to the model: what every sender pays first.
TERMS = ("bytes", "sends", "pages", "segments", "skbs", "completions")
TERM_WORDS = {
    "bytes": "per byte",
    "sends": "per send",
    "segments": "per iovec segment",
    "pages": "per page pinned",
    "skbs": "per skb",
    "completions": "per completion read",
}
TERM_NOUNS = {
    "bytes": "bytes",
    "sends": "sends",
    "segments": "iovec segments",
    "pages": "pages pinned",
    "skbs": "skbs",
    "completions": "completions read",
}
SIDES = {"sender": ("snd",), "receiver": ("rcv",), "both": ("snd", "rcv")}
# What a trial counts only where it could: the zero-copy senders' counts, the transmitted skbs (BPF).
OPTIONAL_COLUMNS = ("zc_sends", "zc_pages_per_message", "zc_notifications", "snd_skbs")
CONDITION_LIMIT = 30.0
RESAMPLES = 400
LEVEL = 0.95


def segments_per_send(declared: Implementation, layout: str) -> int:
    """The iovec segments one send of DECLARED hands the kernel: the fields as they lie (FIELD_COUNT) unless the
    sender packs them first (a user copy) or holds them back to back (contiguous), or sends from a file (one)."""
    packs = declared.copies.user_copy is not None or not declared.driver.layouts
    return 1 if packs or layout == "contiguous" else FIELD_COUNT


def _column(trials: pd.DataFrame, name: str) -> pd.Series:
    """TRIALS' column NAME, or NaN in every row where the trials do not have it."""
    return trials[name] if name in trials else pd.Series(float("nan"), index=trials.index)


def units(trials: pd.DataFrame, declared: Implementation) -> pd.DataFrame:
    """Each trial's units of work in its window, a column per term (NaN: not measured); TRIALS are DECLARED's."""
    trials = trials.assign(**{name: _column(trials, name) for name in OPTIONAL_COLUMNS})
    sends = trials["zc_sends"].where(trials["zc_sends"].notna(), trials["messages"]).astype("float64")
    per_send = [segments_per_send(declared, layout) for layout in trials["layout"]]
    pins = trials["zc_pages_per_message"].fillna(0.0) * trials["messages"]
    return pd.DataFrame(
        {
            "bytes": trials["bytes"].astype("float64"),
            "sends": sends,
            "segments": sends * np.asarray(per_send, dtype="float64"),
            "pages": pins.astype("float64"),
            "skbs": trials["snd_skbs"].astype("float64"),
            "completions": trials["zc_notifications"].fillna(0.0).astype("float64"),
        },
        index=trials.index,
    )


def cpu_ns(trials: pd.DataFrame, side: str) -> pd.Series:
    """The CPU time (user + sys) of SIDE in each trial's window, ns; NaN where not measured."""
    needed = [f"{s}_cpu_{mode}_s" for s in SIDES[side] for mode in ("user", "sys")]
    if not set(needed) <= set(trials.columns):
        return pd.Series(float("nan"), index=trials.index)
    return sum((trials[f"{s}_cpu_user_s"] + trials[f"{s}_cpu_sys_s"]) * 1e9 for s in SIDES[side])


def _condition(columns: np.ndarray) -> float:
    scaled = columns / np.linalg.norm(columns, axis=0)
    return float(np.linalg.cond(scaled))


def choose_terms(x: pd.DataFrame) -> tuple[list[str], dict[str, str]]:
    """The terms the data can tell apart, in TERMS' order, and why each other term is left out."""
    kept: list[str] = []
    left: dict[str, str] = {}
    for term in TERMS:
        column = x[term]
        if column.isna().any():
            left[term] = "not measured in every trial"
        elif not (column > 0).any():
            left[term] = "none in any trial"
        elif kept and _condition(x[[*kept, term]].to_numpy()) >= CONDITION_LIMIT:
            unit = x[term] / np.linalg.norm(x[term])
            cosines = {k: float(unit @ (x[k] / np.linalg.norm(x[k]))) for k in kept}
            partner = max(cosines, key=lambda k: cosines[k])
            left[term] = f"moves with the {TERM_NOUNS[partner]} (cosine {cosines[partner]:.3f})"
        else:
            kept.append(term)
    return kept, left


@dataclass(frozen=True)
class CostFit:
    """One implementation's and side's fitted costs, ns per unit, with their resampled draws."""

    declared: Implementation
    side: str
    terms: list[str]
    estimates: np.ndarray
    draws: np.ndarray  # RESAMPLES x terms; empty with one block
    left_out: dict[str, str] = field(default_factory=dict)
    trials: int = 0
    blocks: int = 0
    spread: float = float("nan")  # root mean square of the residuals over the mean CPU time: how closely it fits

    @property
    def implementation(self) -> str:
        return self.declared.name

    def interval(self, term: str) -> tuple[float, float]:
        if term not in self.terms or len(self.draws) == 0:
            return float("nan"), float("nan")
        column = self.draws[:, self.terms.index(term)]
        tail = (1 - LEVEL) / 2 * 100
        return float(np.percentile(column, tail)), float(np.percentile(column, 100 - tail))

    def estimate(self, term: str) -> float:
        return float(self.estimates[self.terms.index(term)]) if term in self.terms else float("nan")

    def estimate_or_zero(self, term: str) -> float:
        return float(self.estimates[self.terms.index(term)]) if term in self.terms else 0.0

    def draw(self, index: int) -> Callable[[str], float]:
        """The costs of resample INDEX, term -> ns (0 for a term left out)."""
        return lambda term: float(self.draws[index, self.terms.index(term)]) if term in self.terms else 0.0


def _solve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    scale = np.linalg.norm(x, axis=0)
    solution, _ = nnls(x / scale, y, maxiter=50 * x.shape[1])
    return np.asarray(solution / scale)


def fit(trials: pd.DataFrame, declared: Implementation, side: str, seed: int = 0) -> CostFit | None:
    """The cost model of DECLARED's SIDE over TRIALS (ok stream trials, receive copy); None without two trials with
    CPU times and at least one term."""
    if not {"bytes", "messages", "layout", "repetition"} <= set(trials.columns):
        return None
    rows = trials[(trials["implementation"] == declared.name) & (trials["receive"] == "copy")]
    rows = rows[rows["workload"] == "stream"]
    y = cpu_ns(rows, side)
    rows, y = rows[y.notna()], y[y.notna()]
    x = units(rows, declared)
    terms, left = choose_terms(x)
    if len(rows) < max(2, len(terms)) or not terms:
        return None
    matrix, target = x[terms].to_numpy(), y.to_numpy(dtype="float64")
    estimates = _solve(matrix, target)
    residual = target - matrix @ estimates
    spread = float(np.sqrt(np.mean(residual**2)) / target.mean()) if target.mean() > 0 else float("nan")
    blocks = rows["repetition"].to_numpy()
    names = np.unique(blocks)
    draws = np.empty((0, len(terms)))
    if len(names) > 1:
        generator = np.random.default_rng(seed)
        where = {b: np.flatnonzero(blocks == b) for b in names}
        picks = [np.concatenate([where[b] for b in generator.choice(names, len(names))]) for _ in range(RESAMPLES)]
        draws = np.array([_solve(matrix[p], target[p]) for p in picks])
    return CostFit(declared, side, terms, estimates, draws, left, len(rows), len(names), spread)


def per_message(trials: pd.DataFrame, declared: Implementation) -> pd.DataFrame:
    """DECLARED's mean units of work per message received, a row per message size of TRIALS."""
    rows = trials[(trials["implementation"] == declared.name) & (trials["messages"] > 0)]
    found = units(rows, declared).div(rows["messages"], axis=0).fillna(0.0)
    return found.groupby(rows["size_bytes"]).mean().sort_index()


def cost_per_message(costs: Callable[[str], float], units_per_message: pd.DataFrame) -> pd.Series:
    """The CPU time per message, ns, that COSTS (term -> ns per unit) predict at each size."""
    # One product of the units (a row per size) with the costs: a resampling loop calls this thousands of times.
    units = units_per_message[list(TERMS)]
    return pd.Series(units.to_numpy(dtype=float) @ np.array([costs(term) for term in TERMS]), index=units.index)


def _crossing(difference: pd.Series) -> float | None:
    """The size above which DIFFERENCE (challenger's cost less the baseline's, by size) turns negative and stays
    negative, interpolated in log2 of the size; NaN when it is negative at every size, None when it never turns."""
    sizes, values = list(difference.index), difference.to_numpy()
    if (values < 0).all():
        return float("nan")
    if values[-1] >= 0:
        return None
    last = int(np.flatnonzero(values >= 0)[-1])
    low, high = np.log2(sizes[last]), np.log2(sizes[last + 1])
    t = values[last] / (values[last] - values[last + 1])
    return float(2 ** (low + t * (high - low)))


@dataclass(frozen=True)
class PredictedCrossover:
    """Where the fitted costs put the size above which the challenger costs less CPU per message."""

    at: float | None  # bytes; NaN: cheaper at every size; None: never cheaper
    low: float  # the resamples' 95% interval of it, among those that cross
    high: float
    crossing: float  # the share of resamples that cross inside the sizes
    sizes: tuple[int, ...]


def predicted_crossover(
    trials: pd.DataFrame, challenger: CostFit, baseline: CostFit, where: pd.DataFrame
) -> PredictedCrossover | None:
    """The crossover CHALLENGER's and BASELINE's fitted costs predict over the message sizes of WHERE (the trials
    whose mean units of work per message they are weighed by); None without two common sizes."""
    units_c, units_b = per_message(where, challenger.declared), per_message(where, baseline.declared)
    common = units_c.index.intersection(units_b.index)
    if len(common) < 2:
        return None
    units_c, units_b = units_c.loc[common], units_b.loc[common]

    def crossing(costs_c: Callable[[str], float], costs_b: Callable[[str], float]) -> float | None:
        return _crossing(cost_per_message(costs_c, units_c) - cost_per_message(costs_b, units_b))

    at = crossing(challenger.estimate_or_zero, baseline.estimate_or_zero)
    resampled = min(len(challenger.draws), len(baseline.draws))
    drawn = [crossing(challenger.draw(i), baseline.draw(i)) for i in range(resampled)]
    inside = [d for d in drawn if d is not None and not np.isnan(d)]
    low, high = (float(np.percentile(inside, 2.5)), float(np.percentile(inside, 97.5))) if inside else (np.nan, np.nan)
    share = len(inside) / resampled if resampled else float("nan")
    return PredictedCrossover(at, low, high, share, tuple(int(s) for s in common))
