"""Where copying less pays (issue 37): the sweeps ./inv report runs come from the experiments' declarations, the report
finds the sink and mmap sweeps by their manifests, and question 5 behind the sink is computed from crossovers.csv."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from copylab import experiments
from copylab.analysis.analyze_sweep import analyze
from copylab.declarations import config
from copylab.experiments.copies import MAPPING_MTU
from copylab.formatting import fmt_num, fmt_size
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.experiments.copies import answers
from copylab.report.experiments.copies.answers import sink as sink_answers
from copylab.report.results import Results, load_results
from copylab.report.sections import compose
from copylab.study import pipeline
from tests.synthetic import make_trials, write_sweep
from tests.test_answers import make_sweep

SIZES = (1024, 4096, 16384, 65536, 262144)


def test_the_report_runs_the_profiles_each_experiment_declares(monkeypatch):
    declared = [
        (experiment.name, profile)
        for experiment in sorted(experiments.EXPERIMENTS.values(), key=lambda e: not e.main)
        for profile in experiment.reported
    ]
    planned = pipeline.report_sweeps("STAMP")
    assert [(name, profile) for name, profile, _ in planned] == declared
    assert ("copies", "sink") in declared and ("copies", "mmap") in declared
    assert planned[0] == ("copies", "quick", "quick-STAMP") and ("servers", "quick", "quick-servers-STAMP") in planned
    # the declaration alone decides: drop the copies experiment's extra profiles and the report runs without them
    copies = experiments.EXPERIMENTS["copies"]
    monkeypatch.setitem(experiments.EXPERIMENTS, "copies", dataclasses.replace(copies, reported=("quick",)))
    assert [profile for name, profile, _ in pipeline.report_sweeps("S") if name == "copies"] == ["quick"]


def test_the_sink_and_mmap_profiles_make_the_sweeps_the_report_needs():
    sink = config.make_config("s", "sink")
    assert sink.path == "sink" and sink.workloads == ("stream",) and sink.receive == ("copy",)
    assert {"two_copy", "one_copy", "zero_copy", "uring_send", "uring_send_zc"} == set(sink.implementations)
    assert sink.threads == (1,) and min(sink.sizes) == 1024 and max(sink.sizes) == 256 << 10
    assert sink.distinct_messages > 1  # cold sources, as a server's
    mapped = config.make_config("m", "mmap")
    assert mapped.mtu == MAPPING_MTU and "mmap" in mapped.receive and mapped.path == "veth"


def _sink(crossover: tuple[str, float, float, float]) -> Results:
    """The answers' fixture sweep as if on the sink: zero_copy's crossovers row says CROSSOVER, nothing copied."""
    sweep = make_sweep(copied=0.0)
    parameters = dataclasses.replace(sweep.manifest.parameters, path="sink")
    crossovers = sweep.crossovers.copy()
    status, at, low, high = crossover
    crossovers.loc[crossovers["challenger"] == "zero_copy", ["status", "crossover_at", "ci_low", "ci_high"]] = [
        status,
        at,
        low,
        high,
    ]
    crossovers = crossovers[(crossovers["challenger"] != "zero_copy") | (crossovers["threads"] == 1)]
    return dataclasses.replace(
        sweep, manifest=dataclasses.replace(sweep.manifest, parameters=parameters), crossovers=crossovers
    )


def test_q5_behind_the_sink_is_computed_from_crossovers():
    veth = make_sweep()
    first = answers.answer_q5(veth, _sink(("crossover", 9000.0, 7000.0, 12000.0)))
    short = first.split("\n\n")[0]
    assert "Over the veth" in short and "never better" in short and "100.0%" in short
    assert f"better from about **{fmt_size(9000.0, approximate=True)}**" in short
    assert f"(95% interval {fmt_size(7000.0, approximate=True)} to {fmt_size(12000.0, approximate=True)};" in short
    assert "0.0% of its" in short and "10 KB" in short  # nothing copied behind the sink, beside the kernel's figure
    moved = answers.answer_q5(veth, _sink(("crossover", 40000.0, 30000.0, 60000.0)))
    assert f"from about **{fmt_size(40000.0, approximate=True)}**" in moved and fmt_size(9000.0, True) not in moved
    never = answers.answer_q5(veth, _sink(("challenger_never_better", np.nan, np.nan, np.nan)))
    assert "Behind the sink, `zero_copy` against `two_copy`: never better" in never
    alone = answers.answer_q5(veth, None)
    assert "was not measured" in alone and sink_answers.measure_command("sink") in alone


def _synthetic(directory: Path, trials: pd.DataFrame, **parameters: object) -> Results:
    write_sweep(directory, trials, {"parameters": parameters})
    store = SweepStore(directory, figures_root=directory.parent.parent / "figures", data_root=directory.parent)
    analyze(store, plugins.draw)
    return load_results(store)


@pytest.fixture(scope="module")
def three_sweeps(tmp_path_factory) -> dict[str, Results]:
    """A veth sweep, a sink sweep (zero_copy overtakes two_copy at 16 KiB) and an mmap sweep at MAPPING_MTU, each
    small and synthetic, analysed for real; named so that their names say nothing of what they are."""
    data = tmp_path_factory.mktemp("where") / "data"
    common = dict(workloads=("stream",), threads=(1,), trials=3, sizes=SIZES)
    veth = make_trials(sweep="alpha", implementations=("two_copy", "one_copy", "zero_copy"), **common)
    sink = make_trials(sweep="beta", implementations=("two_copy", "zero_copy"), shapes={"zero_copy": 16384.0}, **common)
    sink["path"], sink["zc_copied"], sink["sink_datagrams"] = "sink", 0, sink["messages"]
    sink.loc[sink["implementation"] != "zero_copy", "zc_copied"] = np.nan
    mapped = make_trials(
        sweep="gamma",
        implementations=("two_copy", "zero_copy"),
        receives=("copy", "mmap"),
        **{**common, "sizes": (65536,)},
    )
    by_mmap = mapped["receive"] == "mmap"
    half = mapped["bytes"] // 2
    mapped.loc[by_mmap, "rx_mapped_bytes"] = np.where(mapped["implementation"] == "zero_copy", half, 0)[by_mmap]
    mapped.loc[by_mmap, "rx_copybuf_bytes"] = (mapped["bytes"] - mapped["rx_mapped_bytes"].fillna(0))[by_mmap]
    mapped.loc[by_mmap, "rx_copied_bytes"] = 0
    # Small pages: two_copy's bytes map too, and each of its trials moves SMALL_PAGES_COPY of the large pages' when
    # received by copy and SMALL_PAGES_MAPPED when received by mapping.
    small = mapped.assign(sweep="delta")
    small.loc[small["receive"] == "mmap", "rx_mapped_bytes"] = half[small["receive"] == "mmap"]
    small.loc[small["receive"] == "mmap", "rx_copybuf_bytes"] = (small["bytes"] - half)[small["receive"] == "mmap"]
    two_copy = small["implementation"] == "two_copy"
    copy_large = mapped.loc[two_copy & (mapped["receive"] == "copy"), "throughput_gbps"].to_numpy()
    for receive, factor in (("copy", SMALL_PAGES_COPY), ("mmap", SMALL_PAGES_MAPPED)):
        small.loc[two_copy & (small["receive"] == receive), "throughput_gbps"] = copy_large * factor
    return {
        "veth": _synthetic(data / "alpha", veth),
        "sink": _synthetic(data / "beta", sink, path="sink", distinct_messages=2048),
        "mmap": _synthetic(data / "gamma", mapped, mtu=MAPPING_MTU),
        "mmap-small": _synthetic(data / "delta", small, mtu=MAPPING_MTU, sender_pages="small"),
    }


SMALL_PAGES_COPY, SMALL_PAGES_MAPPED = 0.8, 0.9


def _text(sweeps: list[Results]) -> str:
    arranged = compose.arrange(sweeps)
    return "\n\n".join(getattr(block, "text", "") for block in compose.blocks(arranged, date(2026, 1, 1)))


def _appendix(text: str, start: str) -> str:
    """TEXT from START to the next appendix (the appendices follow the graded report, lettered)."""
    begin = text.index(start)
    return text[begin : text.index("\n# Appendix ", begin)]


def test_the_report_finds_the_sink_and_mmap_sweeps_by_their_manifests(three_sweeps):
    veth, sink, mapped = three_sweeps["veth"], three_sweeps["sink"], three_sweeps["mmap"]
    arranged = compose.arrange([sink, veth, mapped])
    assert arranged.main is veth and arranged.companions == {"sink": sink, "mmap": mapped} and not arranged.further
    text = _text([veth, sink, mapped])
    where = _appendix(text, ": Where copying less pays")
    assert "Behind the sink, `zero_copy` against `two_copy`: better from about" in text
    assert "`zero_copy`: the kernel copied 0.0% of its" in where and "2,048 distinct messages" in where
    assert "not a NIC" in where.replace("\n", " ") or "It is not a NIC" in where
    assert f"MTU {MAPPING_MTU:,} B" in where and "| Mapped |" in where and "| Copied in the call |" in where
    assert "50.0%" in where  # zero_copy's mapped share, from the rows
    assert "was not measured" not in where


def test_a_report_of_the_veth_sweep_alone_says_what_was_not_measured(three_sweeps):
    text = _text([three_sweeps["veth"]])
    where = _appendix(text, ": Where copying less pays")
    assert where.count("was not measured") == 2
    assert sink_answers.measure_command("sink") in where and sink_answers.measure_command("mmap") in where


def test_small_pages_are_their_own_sweep_and_their_cost_is_computed(three_sweeps):
    veth, mapped, small = three_sweeps["veth"], three_sweeps["mmap"], three_sweeps["mmap-small"]
    arranged = compose.arrange([small, veth, mapped])
    assert arranged.companions == {"mmap": mapped, "mmap-small": small}
    text = _text([veth, mapped, small])
    where = _appendix(text, "## The receiver's side").replace("\n", " ")
    # two_copy mapped nothing with large pages and half with small ones, from the rows.
    assert "With multi-page (32 KiB) buffers (the kernel's default): `two_copy` faster at 0 of 1 sizes" in where
    assert "With single 4 KiB pages (`--sender-pages small`): `two_copy` faster at" in where
    assert "with 0.0% of the bytes mapped" in where and where.count("with 50.0% of the bytes mapped") == 3
    assert "Small pages also slowed receiving by copy." in where
    assert f"pages was {fmt_num(SMALL_PAGES_COPY)}× of that with 32 KiB buffers" in where
    assert f"Receiving by mapping with small pages was {fmt_num(SMALL_PAGES_MAPPED)}× of receiving by copy" in where
    assert "So mapping did not beat copying into the kernel's default pages here." in where
    alone = _text([veth, mapped]).replace("\n", " ")
    assert f"Small pages were not measured; {sink_answers.measure_command('mmap-small')} measures them." in alone
