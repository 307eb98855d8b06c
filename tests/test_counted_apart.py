"""The kernel's counts (BPF) are taken in a sweep of their own: counting slows the traffic it counts, so no other
sweep ./inv report runs counts, the report reads the counts from that sweep, and without root it is skipped."""

from __future__ import annotations

import dataclasses

import pandas as pd

from copylab import experiments
from copylab.declarations.config import make_config
from copylab.error_catalogue import COUNTS_NEED_ROOT
from copylab.report.experiments.copies import answers
from copylab.report.experiments.copies import report as copies_report
from copylab.study import pipeline
from tests.test_answers import make_sweep


def test_only_the_counts_sweep_counts_among_the_reported_ones():
    counting = [
        profile
        for experiment, profile in experiments.reported()
        if make_config("check", profile, experiment=experiment.name).kernel_copies
    ]
    assert counting == ["counts"]


def test_the_report_claims_the_counts_sweep_by_its_manifest():
    main = make_sweep()
    counted = dataclasses.replace(main, manifest=dataclasses.replace(main.manifest, profile="counts"))
    assert copies_report.companion(counted) == "counts"
    assert copies_report.companion(main) is None


def test_copy_evidence_reads_the_counts_from_the_sweep_that_counted_them():
    main = make_sweep()
    assert "The kernel's copies to user space were not counted" in answers.copy_evidence(main)
    summary = main.summary
    rows = summary[(summary["metric"] == "throughput_gbps") & (summary["workload"] == "stream")].copy()
    rows["metric"], rows["mean"] = "rcv_kernel_copies_per_byte", 1.0
    counted = dataclasses.replace(main, summary=pd.concat([summary, rows], ignore_index=True))
    text = answers.copy_evidence(main, counted)
    assert "receiving by `copy` 1.00" in text
    assert "were not counted" not in text
    assert "These counts come from the report's counts sweep" in text
    assert "These counts come from" not in answers.copy_evidence(counted)


def test_copy_evidence_says_why_a_sweep_has_no_counts():
    main = make_sweep()
    parameters = dataclasses.replace(main.manifest.parameters, kernel_copies=False)
    uncounted = dataclasses.replace(main, manifest=dataclasses.replace(main.manifest, parameters=parameters))
    assert "the sweep ran without them (`--kernel-copies` asks for them)" in answers.copy_evidence(uncounted)
    skipped = dataclasses.replace(
        uncounted, manifest=dataclasses.replace(uncounted.manifest, not_measured={"counts": "BPF needs root"})
    )
    assert "the report's counts sweep did not run, because BPF needs root" in answers.copy_evidence(skipped)


def test_without_root_the_counts_sweep_is_skipped_with_its_reason(monkeypatch):
    monkeypatch.setattr(pipeline.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(pipeline.sender_pages, "refusal_without_root", lambda pages: None)
    assert pipeline._not_here("copies", "counts") == COUNTS_NEED_ROOT.text()
    assert pipeline._not_here("copies", "quick") is None
    monkeypatch.setattr(pipeline.os, "geteuid", lambda: 0)
    assert pipeline._not_here("copies", "counts") is None
