"""One budget for the whole report (issue 43): the deciding comparisons at every size and the others at the side sizes,
the time left after the first passes shared across sweeps by one ranking, a sweep that goes on where it is still
undecided, and question 4 answered per thread count with what would settle it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from copylab.declarations import config
from copylab.declarations.implementations import get
from copylab.errors import CopylabError
from copylab.experiments.copies import REPORT_SIZES
from copylab.measure.planning import schedule
from copylab.record.store import SweepStore
from copylab.report import limitation
from copylab.study import budget
from tests.test_answers import make_sweep


def test_the_main_sweep_measures_the_studys_grid_and_the_sink_its_range():
    """64 B to 256 KiB at threads 1, 2, 4 and 8 (ASSIGNMENT.md), sizes 4x apart: a curve has sizes on both sides of
    16 KiB and below 1 KiB, where two_copy should win; the sink 1 KiB to 256 KiB."""
    quick, sink = config.make_config("q", "quick"), config.make_config("s", "sink")
    assert list(quick.sizes) == REPORT_SIZES and min(quick.sizes) == 64 and max(quick.sizes) == 256 << 10
    assert list(quick.threads) == [1, 2, 4, 8]
    assert min(sink.sizes) == 1024 and max(sink.sizes) == 256 << 10
    for sweep in (quick, sink):
        assert all(b == 4 * a for a, b in zip(sweep.sizes, sweep.sizes[1:], strict=False))
        assert len([s for s in sweep.sizes if s < 16384]) >= 2 and len([s for s in sweep.sizes if s > 16384]) >= 2
    assert len([s for s in quick.sizes if s < 1024]) >= 2


def test_deciding_contenders_run_at_every_size_and_the_others_at_the_side_sizes():
    quick = config.make_config("q", "quick")
    deciding = schedule.deciding_contenders(quick)
    stream = [c for c in schedule.configurations(quick) if c.workload == "stream"]
    sizes_of: dict[tuple[str, str, str], set[int]] = {}
    for c in stream:
        sizes_of.setdefault(schedule.contender_of(c), set()).add(c.size_bytes)
    assert {contender for contender in sizes_of if sizes_of[contender] == set(quick.sizes)} == deciding
    others = [sizes for contender, sizes in sizes_of.items() if contender not in deciding]
    assert others and all(sizes == set(quick.side_sizes) for sizes in others)
    # without side sizes every contender runs at every size
    every = config.make_config("q", "quick", side_sizes=[])
    assert {c.size_bytes for c in schedule.configurations(every) if c.implementation == "sendfile"} == set(quick.sizes)


def test_side_sizes_outside_the_sizes_are_refused_in_one_line():
    with pytest.raises(CopylabError, match=r"side-sizes: 2048 not among --sizes"):
        config.make_config("q", "quick", sizes=[1024, 4096], side_sizes=[2048])


def test_a_budget_of_nothing_is_the_first_pass_alone():
    first = config.make_config("q", "quick", budget_s=0.0)
    assert first.budget_s == 0.0


def _open(name: str, priorities: list[float], cost: float, reason: int = budget.UNDECIDED) -> budget.Open:
    ranks = tuple((reason, priority) for priority in priorities)
    return budget.Open(SweepStore(Path("/nonexistent") / name), ranks, tuple(cost for _ in priorities))


def test_the_time_left_goes_to_the_best_ranked_points_across_sweeps():
    quick = _open("quick", [0.0, 0.9], 10.0)  # one point beside a change of sign, one far from significance
    sink = _open("sink", [-1.0, 0.5], 10.0)  # one point not compared yet
    given = budget.shares([quick, sink], 30.0)
    # the three best-ranked points (-1, 0, 0.5) fit, the worst (0.9) does not
    assert given == {sink.store: 20.0, quick.store: 10.0}
    # time for more than one block at each point: rounds of them, so neither sweep is left waiting for the other
    assert budget.shares([quick, sink], 85.0) == {quick.store: 40.0, sink.store: 40.0}


def test_a_share_too_small_for_a_sweeps_start_up_is_not_given():
    tiny = _open("tiny", [0.0], budget.LEAST_SHARE_S / 2)
    assert budget.shares([tiny], budget.LEAST_SHARE_S * 0.75) == {}  # one block fits, a second does not


def test_little_time_goes_whole_to_the_best_ranked_sweeps_not_in_crumbs_to_all():
    quick = _open("quick", [0.0, 0.1], 1.0)
    others = [_open(name, [0.5], 1.0) for name in ("sink", "caches", "threads")]
    # in rounds over all four sweeps, 6 s would give quick 3 s and each other sweep 1 s: none worth a start-up
    assert budget.shares([quick, *others], 6.0) == {quick.store: 6.0}


def test_the_studys_undecided_verdicts_come_before_its_imprecise_means_and_before_other_experiments():
    quick = _open("quick", [0.9], 1.0)
    caches = _open("caches", [1.0], 1.0, budget.IMPRECISE)
    servers = _open("servers", [-1.0], 1.0, budget.ELSEWHERE)
    assert budget.shares([quick, caches, servers], 10.0) == {quick.store: 10.0}
    # once no block of the first reason fits, the next reason's points get what is left
    wide = _open("quick", [0.9], 6.0)
    assert budget.shares([wide, caches, servers], 20.0) == {wide.store: 18.0}
    assert budget.shares([_open("quick", [0.0], 10.0)], 5.0) == {}  # nothing affordable


def test_a_sweep_the_report_could_not_run_is_said_with_the_command_that_runs_it():
    sweep = make_sweep()
    assert limitation.not_measured(sweep.manifest) is None
    sweep.manifest.not_measured["mmap-small"] = "sender-pages: small needs root"
    text = limitation.not_measured(sweep.manifest)
    assert text is not None
    assert "`mmap-small` sweep (sender-pages: small needs root)" in text and "Run as root, `./inv report`" in text
    assert "what only that sweep shows" in text and "measures it too" in text
    sweep.manifest.not_measured["counts"] = "it counts the kernel's copies with BPF (bpftrace), which needs root"
    both = limitation.not_measured(sweep.manifest) or ""
    assert "what only those sweeps show" in both and "measures them too" in both and "`counts` sweep" in both


def test_question_4_names_a_size_or_every_size_per_thread_count_with_a_table_each():
    from copylab.report.experiments.copies import answers

    for status, phrase in (
        ("crossover", "faster from about 5,793 B (95% CI 4,100 B to 8,191 B)"),
        ("challenger_never_better", "never faster: slower at every size where the two differ"),
        ("indistinguishable", "indistinguishable at every size from 64 B to 64 KiB"),
    ):
        text = answers.answers(make_sweep(status=status))[3][1].markdown()
        short = text.split("\n\n")[0]
        assert phrase in short and "with 1 thread" in short and "with 4 threads" in short
        assert text.count("| Size | Throughput ratio |") == 2  # a ratio table per thread count
        assert "not settled" not in short


def test_the_verified_pass_checks_every_reported_implementation_in_each_of_its_receive_modes():
    from copylab.study.pipeline import report_sweeps
    from copylab.study.verification import _wanted

    wanted = _wanted(report_sweeps("S"))
    for experiment, profile, _ in report_sweeps("S"):
        reported = config.make_config("x", profile, experiment=experiment)
        for member in reported.members.values():
            assert set(schedule.receive_modes_of(reported, member)) <= wanted[experiment].modes[member.name]


def test_the_verified_pass_refuses_to_measure_when_bytes_arrive_wrong(monkeypatch, tmp_path):
    import pandas as pd

    from copylab.study import verification

    class Ran:
        directory = tmp_path / "verify-copies-S"

    monkeypatch.setattr(verification.sweep, "run", lambda *args, **kwargs: Ran())
    rows = pd.DataFrame(
        {"implementation": ["two_copy"], "receive": ["mmap"], "status": ["failed"], "error": ["byte 7 differs"]}
    )
    monkeypatch.setattr(verification.SweepStore, "recorded_trials", lambda self: rows)
    with pytest.raises(CopylabError, match=r"two_copy receiving by mmap: byte 7 differs .* nothing was measured"):
        verification.verified_pass([("copies", "quick", "quick-S")], "S", tmp_path)
    rows.loc[0, "status"] = "ok"
    found = verification.verified_pass([("copies", "quick", "quick-S")], "S", tmp_path)
    assert found.checked == ["two_copy mmap"] and found.sweeps == ["verify-copies-S"]


def test_an_open_curve_gets_blocks_where_its_band_is_widest():
    from copylab.analysis.deciding import curve_of
    from copylab.measure.planning import allocation

    sizes = np.array([1024 << k for k in range(9)], dtype=float)
    spread = np.array([-1.0, 0.0, 1.0])
    # no difference, three blocks each; at 256 KiB they spread ten times as much: the band is widest there
    advantages = [0.03 * spread for _ in sizes]
    advantages[-1] = 0.3 * spread
    curve = curve_of(sizes, advantages, 0)
    wanted = allocation.wanted_points(curve, most_blocks=20)
    assert wanted and wanted[0][1] == sizes[-1]
    assert all(0.0 <= priority < 1.0 for priority, _ in wanted)
    assert len(wanted) <= allocation.MOST_PER_CURVE + 1
    # a point that has its most blocks already gets none
    assert sizes[-1] not in [point for _, point in allocation.wanted_points(curve, most_blocks=3)]


def test_a_cycles_part_too_little_for_a_start_up_gives_way_to_all_the_time_left(monkeypatch, capsys):
    from types import SimpleNamespace

    from copylab.study import pipeline

    quick = _open("quick", [0.0], 1.0)
    monkeypatch.setattr(pipeline, "still_open", lambda store: quick)
    monkeypatch.setattr(SweepStore, "read_manifest", lambda self: SimpleNamespace(parameters=None))
    given: list[float] = []

    def run(config: object, *where: object, **options: float) -> SimpleNamespace:
        given.append(options["more_s"])
        return SimpleNamespace(ran=1, wall_s=options["more_s"])

    monkeypatch.setattr(pipeline.sweep, "run", run)
    # a third of 6 s is under the least share worth a start-up: the first cycle takes all 6 s instead of nothing
    pipeline.more_time([quick.store], 6.0)
    assert given and budget.LEAST_SHARE_S <= given[0] <= 6.0
    assert "where verdicts or means are still open: quick" in capsys.readouterr().out


@pytest.mark.parametrize(("profile", "reason"), [("quick", budget.UNDECIDED), ("caches", budget.ELSEWHERE)])
def test_only_the_verdicts_the_answers_quote_come_first(monkeypatch, profile, reason):
    from types import SimpleNamespace

    import pandas as pd

    made = config.make_config("q", profile)
    undecided = {"point": (0.0, {schedule.study_contender(get("one_copy")), schedule.study_contender(get("two_copy"))})}
    monkeypatch.setattr(budget.allocation, "prioritized", lambda ok, config: undecided)
    monkeypatch.setattr(budget.budgeted, "imprecise_blocks", lambda config, rows: [])
    rows = pd.DataFrame({"status": ["ok"], "trial_wall_s": [0.3]})
    store = SimpleNamespace(read_manifest=lambda: SimpleNamespace(parameters=made), recorded_trials=lambda: rows)
    found = budget.still_open(store)
    # the caches sweep's own crossover answers nothing (question 2 reads its means): its points wait
    assert found is not None and found.ranks == ((reason, 0.0),) and found.costs_s == (0.6,)
