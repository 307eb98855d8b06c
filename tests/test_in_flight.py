"""The zero-copy senders' bytes in flight, chosen from the path at a sweep's start (copylab.measure.host.in_flight)."""

from __future__ import annotations

import csv
import math

import pytest

from copylab import experiments
from copylab.declarations import settings
from copylab.formatting import fmt_size
from copylab.measure import sweep
from copylab.measure.host import in_flight
from copylab.measure.running.spec import TrialSettings
from copylab.programs import perf
from copylab.record.store import SweepStore
from copylab.report.sections.methodology import _in_flight
from copylab.testbeds import netns, testbed
from copylab.vocabulary.limits import DEFAULT_ZC_INFLIGHT
from tests.conftest import needs_root
from tests.test_sweep import tiny


def test_the_ring_holds_twice_the_paths_product_in_whole_pages_at_least_the_floor_within_the_limit():
    # veth-like: 20 Gbit/s and 20 us hold 50 kB; twice that is below the floor
    assert in_flight.choose(20.0, 20.0) == DEFAULT_ZC_INFLIGHT
    # a network path: 10 Gbit/s and 1 ms hold 1.25 MB; twice that, rounded up to whole pages
    chosen = in_flight.choose(10.0, 1000.0)
    assert chosen == math.ceil(2 * 1.25e6 / 4096) * 4096 and chosen % 4096 == 0
    assert in_flight.choose(10.0, 1001.0) >= chosen
    assert in_flight.choose(400.0, 1e6) == settings.get("zc_inflight").high


def test_a_failed_measuring_trial_leaves_the_floor_and_says_why(monkeypatch):
    monkeypatch.setattr(in_flight, "run_trial", lambda spec, quiet: {"status": "failed", "error": "server exited 1"})
    bed = testbed.Namespaces(netns.NamespacePair("a", "b"), "x")  # made, never brought up
    quiet = TrialSettings("x", bed, perf.PerfSupport(available=False, version=None), 0.2, 0.1)
    chosen = in_flight.measure(experiments.get("copies"), quiet)
    assert chosen.zc_inflight == DEFAULT_ZC_INFLIGHT and chosen.throughput_gbps is None
    assert "failed (server exited 1)" in chosen.how


@needs_root
def test_a_sweep_without_zc_inflight_measures_the_path_and_records_the_choice_per_row(tmp_path):
    config = tiny("inflight", workloads=["stream"], sizes=[16384], threads=[1], trials=1)
    assert config.zc_inflight is None
    sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    manifest = SweepStore(tmp_path / "inflight").read_manifest()
    chosen = manifest.in_flight
    assert chosen is not None and chosen.throughput_gbps > 0 and chosen.srtt_us > 0
    assert chosen.bandwidth_delay_bytes == round(chosen.throughput_gbps * 1e9 / 8 * chosen.srtt_us * 1e-6)
    assert chosen.zc_inflight == in_flight.choose(chosen.throughput_gbps, chosen.srtt_us)
    with (tmp_path / "inflight" / "trials.csv").open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert {row["zc_inflight_bytes"] for row in rows} == {str(chosen.zc_inflight)}
    assert all(float(row["srtt_us"]) > 0 for row in rows)
    # Over veth the product may be above or below the floor (cubic's round trips here are 20-400 us): the words
    # follow the choice, and the method states the product either way.
    above = chosen.zc_inflight > in_flight.FLOOR_BYTES
    assert chosen.how.startswith("twice the path's bandwidth-delay product" if above else "the floor, above twice")
    text = _in_flight(manifest)
    product = fmt_size(chosen.bandwidth_delay_bytes)
    assert "**Zero-copy ring.**" in text and f"a bandwidth-delay product of {product}" in text


@needs_root
@pytest.mark.parametrize("implementations", [["two_copy", "zero_copy"], ["two_copy"]])
def test_a_sweep_that_sets_zc_inflight_or_sends_no_zero_copy_measures_nothing(tmp_path, implementations):
    given = None if implementations == ["two_copy"] else 64 << 10
    config = tiny(
        "set",
        implementations=implementations,
        workloads=["stream"],
        sizes=[1024],
        threads=[1],
        trials=1,
        zc_inflight=given,
    )
    sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    assert SweepStore(tmp_path / "set").read_manifest().in_flight is None
    with (tmp_path / "set" / "trials.csv").open(newline="") as stream:
        assert {row["zc_inflight_bytes"] for row in csv.DictReader(stream)} == {"" if given is None else str(given)}
