"""The cost model (issue 53): costs per unit of work fitted across trials, the terms the data cannot tell apart named,
intervals from resampled blocks, and the crossover the costs predict; the breakdown's shares and figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from copylab.analysis import breakdown, costs
from copylab.declarations import implementations
from copylab.roles import Role

TWO_COPY = implementations.by_role(Role.TWO_COPY).name
ONE_COPY = implementations.by_role(Role.ONE_COPY).name
ZERO_COPY = implementations.by_role(Role.ZERO_COPY).name
SIZES = (1024, 4096, 16384, 65536, 262144)


def _trials(
    name: str, per_byte: float, per_send: float, per_segment: float, per_page: float, noise: float
) -> pd.DataFrame:
    """Trials of NAME whose sender CPU time is made of the given costs (ns), both layouts, three blocks."""
    generator = np.random.default_rng(1)
    rows = []
    for block in (1, 2, 3):
        for size in SIZES:
            for layout in ("fields", "contiguous"):
                messages = int(2e8 / (size + 4096))
                pages = (size / 4096 + (8 if layout == "fields" else 1)) if per_page else math.nan
                segments = costs.segments_per_send(implementations.get(name), layout)
                ns = messages * (
                    per_byte * size
                    + per_send
                    + per_segment * segments
                    + per_page * (0.0 if math.isnan(pages) else pages)
                )
                ns *= 1 + generator.normal(0, noise)
                rows.append(
                    {
                        "trial_id": f"{name}-{size}-{layout}-r{block}",
                        "implementation": name,
                        "workload": "stream",
                        "receive": "copy",
                        "layout": layout,
                        "threads": 1,
                        "pinning": "same_cpu",
                        "size_bytes": size,
                        "repetition": block,
                        "bytes": messages * size,
                        "messages": messages,
                        "zc_sends": messages if per_page else math.nan,
                        "zc_pages_per_message": pages,
                        "zc_notifications": messages / 8 if per_page else math.nan,
                        "snd_skbs": math.nan,
                        "snd_cpu_user_s": 0.0,
                        "snd_cpu_sys_s": ns / 1e9,
                        "rcv_cpu_user_s": 0.0,
                        "rcv_cpu_sys_s": 0.0,
                    }
                )
    return pd.DataFrame(rows)


def test_the_fit_recovers_the_costs_the_trials_were_made_of():
    trials = _trials(ONE_COPY, 0.05, 900.0, 40.0, 0.0, noise=0.002)
    fit = costs.fit(trials, implementations.get(ONE_COPY), "sender")
    assert fit is not None and fit.blocks == 3 and fit.trials == len(trials)
    assert fit.estimate("bytes") == pytest.approx(0.05, rel=0.05)
    assert fit.estimate("sends") == pytest.approx(900.0, rel=0.05)
    assert fit.estimate("segments") == pytest.approx(40.0, rel=0.15)
    low, high = fit.interval("bytes")
    assert low <= fit.estimate("bytes") <= high
    # what no trial counted is said, never fitted as zero
    assert fit.left_out["skbs"] == "not measured in every trial"
    assert fit.left_out["pages"] == "none in any trial"


def test_a_term_that_moves_with_another_is_named_not_fitted():
    # two_copy packs its fields: one segment per send whatever the layout, so segments are the sends again
    trials = _trials(TWO_COPY, 0.1, 500.0, 0.0, 0.0, noise=0.002)
    fit = costs.fit(trials, implementations.get(TWO_COPY), "sender")
    assert fit is not None and "segments" not in fit.terms
    assert fit.left_out["segments"].startswith("moves with the sends")
    fits = [costs.fit(trials, implementations.get(TWO_COPY), side) for side in costs.SIDES]
    assert all("segments" not in found.terms for found in fits if found is not None)


def test_the_predicted_crossover_lies_where_the_costs_are_equal():
    # per message: two_copy 0.2 s + 500, one_copy 0.05 s + 900 + 8 x 40 = 0.05 s + 1220: equal at 4,800 B
    trials = pd.concat(
        [_trials(TWO_COPY, 0.2, 500.0, 0.0, 0.0, 0.001), _trials(ONE_COPY, 0.05, 900.0, 40.0, 0.0, 0.001)]
    )
    ours, theirs = (
        costs.fit(trials, implementations.get(ONE_COPY), "both"),
        costs.fit(trials, implementations.get(TWO_COPY), "both"),
    )
    study = trials[trials["layout"] == "fields"]
    found = costs.predicted_crossover(trials, ours, theirs, study)
    assert found is not None and found.at is not None
    # interpolated between 4 and 16 KiB in log2 of the size: the right interval, not the exact value
    assert 4096 < found.at < 16384 and found.crossing == pytest.approx(1.0)
    assert found.low <= found.at <= found.high


def test_pages_pinned_get_a_cost_of_their_own_when_the_layouts_move_them_apart():
    trials = _trials(ZERO_COPY, 0.0, 1500.0, 0.0, 60.0, noise=0.002)
    fit = costs.fit(trials, implementations.get(ZERO_COPY), "sender")
    assert fit is not None and "pages" in fit.terms
    assert fit.estimate("pages") == pytest.approx(60.0, rel=0.2)


def _profile(trials: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for trial in trials.itertuples():
        copy = 30 if trial.implementation == TWO_COPY else 0
        for side, category, samples in (
            ("sender", "user_copy", copy),
            ("sender", "kernel_copy", 40),
            ("softirq", "tcp_ip", 30),
        ):
            rows.append({"trial_id": trial.trial_id, "side": side, "category": category, "samples": samples})
    frame = pd.DataFrame(rows)
    frame["share"] = frame["samples"] / frame.groupby("trial_id")["samples"].transform("sum")
    frame["trial_samples"] = frame.groupby("trial_id")["samples"].transform("sum")
    return frame


def test_the_shares_come_from_the_samples_and_the_figure_is_drawn():
    trials = pd.concat([_trials(TWO_COPY, 0.2, 500.0, 0.0, 0.0, 0.0), _trials(ONE_COPY, 0.05, 900.0, 40.0, 0.0, 0.0)])
    profile = _profile(trials)
    at = trials[trials["size_bytes"] == 65536]
    two = breakdown.share_of(profile, at[at["implementation"] == TWO_COPY], ["user_copy"])
    one = breakdown.share_of(profile, at[at["implementation"] == ONE_COPY], ["user_copy"])
    assert two == pytest.approx(0.3) and one == 0.0
    shares = breakdown.shares(profile, at, ["implementation", "side"])
    assert shares.groupby("implementation")["samples"].sum().min() > 0
    assert breakdown.unsampled(profile, trials) == []
    assert breakdown.figure_sizes(SIZES, (1024, 16384, 262144)) == [1024, 16384, 262144]
    assert breakdown.figure_sizes(SIZES) == [1024, 16384, 262144]
    figure = breakdown.breakdown_figure(profile, trials, (1024, 16384, 262144))
    assert figure is not None and len(figure.axes) == 3


def test_the_explorer_shows_each_category_share_at_the_inspected_point():
    from copylab.explore.views import View, breakdown_table

    trials = pd.concat([_trials(TWO_COPY, 0.2, 500.0, 0.0, 0.0, 0.0), _trials(ONE_COPY, 0.05, 900.0, 40.0, 0.0, 0.0)])
    trials["status"] = "ok"
    table = breakdown_table(
        _profile(trials), trials, View("stream", "same_cpu"), {"size_bytes": 65536, "threads": 1}, [ONE_COPY, TWO_COPY]
    )
    assert table["implementation"].drop_duplicates().tolist() == [ONE_COPY, TWO_COPY]
    by_side = table.set_index(["implementation", "side"])
    assert by_side.loc[(TWO_COPY, "sender"), "user_copy"] == pytest.approx(0.3)
    assert by_side.loc[(ONE_COPY, "sender"), "user_copy"] == 0.0
    # a category no trial has a sample of is left out
    assert "pinning" not in table.columns


def test_the_limitations_say_which_sweeps_have_no_breakdown_and_why():
    from types import SimpleNamespace

    from copylab.report.experiments.copies.answers.costs import profile_limitations

    def sweep(name: str, profile: pd.DataFrame | str, sampled: bool) -> SimpleNamespace:
        record = SimpleNamespace(sampled=sampled, command="perf record -e cpu-clock -F 999 -g")
        trials = pd.DataFrame({"trial_id": ["t1", "t2"], "status": ["ok", "ok"]})
        return SimpleNamespace(
            name=name,
            store=SimpleNamespace(read_profile=lambda: profile),
            manifest=SimpleNamespace(sampler=record),
            trials=trials,
            layouts=None,
        )

    why = "not sampled: sampling the kernel's functions with perf record needs root (this sweep runs without it)"
    half = pd.DataFrame({"trial_id": ["t1"], "side": ["sender"], "category": ["tcp_ip"], "samples": [5]})
    said = profile_limitations(sweep("quick", why, False), {"sink": sweep("sink", why, False)})
    assert said == [
        f"No CPU breakdown for `quick`, `sink` ({why}). For these sweeps the answers rest on the cost model of "
        "their CPU times alone."
    ]
    said = profile_limitations(sweep("quick", half, True), {})
    assert said[0] == "1 ok trials of `quick` have no samples in the CPU breakdown."
    assert "were sampled while they ran" in said[1]
