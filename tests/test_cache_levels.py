"""Questions 2, 3 and 6 from the sweeps designed for them: the caches and threads profiles, how the report claims
them, their answers from the committed references, the cache simulator's stand-in, and the memory refusal."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from copylab.calibration.record import CacheLevel
from copylab.declarations import config
from copylab.errors import CopylabError
from copylab.experiments.copies import CACHES, PROFILES, THREADS
from copylab.paths import DATA
from copylab.report.experiments.copies import report
from copylab.report.experiments.copies.answers import anomalies, caches, paired, threads
from copylab.report.experiments.copies.basics import cachesim
from copylab.report.results import Results
from tests.reference_analyses import References

GRID, THREAD_SWEEP, MAIN = (DATA / name for name in ("reference-caches", "reference-threads", "reference"))


@pytest.fixture(scope="module")
def grid(references: References) -> Results:
    return references(GRID)


@pytest.fixture(scope="module")
def thread_sweep(references: References) -> Results:
    return references(THREAD_SWEEP)


@pytest.fixture(scope="module")
def main(references: References) -> Results:
    return references(MAIN)


def test_the_profiles_are_reported_and_reach_past_the_caches():
    from copylab.experiments.copies import COPIES

    assert {"caches", "threads"} <= set(COPIES.reported)
    assert PROFILES["caches"] is CACHES and PROFILES["threads"] is THREADS
    # the grid's working sets (twice the message) pass a 32 MiB last-level cache
    assert 2 * max(CACHES["sizes"]) > 32 << 20
    assert len(THREADS["threads"]) >= 4 and max(THREADS["threads"]) > 2
    assert set(THREADS["pinning"]) == {"same_cpu", "split_cpu"}
    for name in ("caches", "threads"):
        made = config.make_config("x", profile=name)
        assert made.trials == 3 and made.design == "blocked" and made.duration_s <= 0.2


def test_the_report_claims_each_sweep_by_its_manifest(grid, thread_sweep, main):
    assert report.companion(grid) == "caches"
    assert report.companion(thread_sweep) == "threads"
    assert report.companion(main) is None


def test_answer_2_names_a_level_from_the_grid(grid):
    record = caches.host_calibration(grid, None)
    text = caches.answer_q2(grid, grid)
    short = text.split("\n\n")[0]
    assert short.startswith("**Claim.** For the study's messages") and "not answered" not in short
    assert any(f"overflows {level.name}:" in short for level in record.caches)
    assert "Simulated, not counted" in text or "could not be simulated here" in text
    assert "kernel's copies" in text or "could not be simulated here" in text
    assert all(f"**{label}.**" in text for label in ("Numbers", "Mechanism", "Test", "Limits"))


def test_answer_2_places_no_level_without_this_hosts_calibration(grid, main):
    other = dataclasses.replace(grid.manifest, calibration=None)
    foreign = dataclasses.replace(main.manifest, host=dataclasses.replace(main.manifest.host, hostname="elsewhere"))
    text = caches.answer_q2(dataclasses.replace(main, manifest=foreign), dataclasses.replace(grid, manifest=other))
    assert text.startswith("**Claim.** Not answered") and "./inv calibrate --data" in text


def test_answer_3_is_settled_and_ties_to_a_cache_or_working_set(thread_sweep):
    text = threads.answer_q3(thread_sweep, thread_sweep)
    short = text.split("\n\n")[0]
    assert threads.q3(thread_sweep, thread_sweep).sure.startswith("paired intervals") and "not settled" not in short
    assert "MiB" in short
    assert "Little's law" in text and "Queueing is not cache contention" in text


def test_answer_3_says_when_the_host_has_more_cpus_than_threads(thread_sweep):
    many = dataclasses.replace(thread_sweep.manifest.host, cores=64)
    sweep = dataclasses.replace(thread_sweep, manifest=dataclasses.replace(thread_sweep.manifest, host=many))
    assert "more threads than CPUs were not measured here" in threads.answer_q3(sweep, sweep)


def test_answer_6_cites_an_implementation_and_its_table(main):
    text = anomalies.answer_q6(main)
    assert text.startswith("**Claim.**") and "`zero_copy`" in text
    assert "| Sender, layout |" in text and "contiguous" in text and main.manifest.host.cpu_model in text


def test_the_simulator_says_in_one_sentence_why_it_cannot_run(monkeypatch):
    cachesim.simulate.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    found = cachesim.simulate((4096,), CacheLevel("L1d", 32 << 10, "0"), CacheLevel("L3", 32 << 20, "0-1"))
    assert found == "valgrind is not installed (./inv installs it as root)"
    cachesim.simulate.cache_clear()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_the_simulated_copy_misses_only_past_each_level(bin_dir):  # built first: a fresh clone has no programs yet
    cachesim.simulate.cache_clear()
    first, last = CacheLevel("L1d", 32 << 10, "0"), CacheLevel("L3", 1 << 20, "0-1")
    small, middle, large = cachesim.simulate((4096, 256 << 10, 2 << 20), first, last)
    assert small.first_per_kib == 0 and small.last_per_kib == 0
    # a source and a destination line per 64 bytes: 32 misses per KiB copied
    assert middle.first_per_kib == pytest.approx(32, rel=0.05) and middle.last_per_kib == 0
    assert large.last_per_kib == pytest.approx(32, rel=0.05)


def test_a_cache_geometry_has_sets_a_power_of_two():
    for size in (32 << 10, 48 << 10, 1 << 20, 32 << 20, 260 << 20):
        total, ways, line = (int(part) for part in cachesim.geometry(size).split(","))
        sets = total // ways // line
        assert total == size and sets & (sets - 1) == 0 and ways >= cachesim.MIN_WAYS


def test_paired_intervals():
    found = paired.interval(np.array([1.0, 2.0, 3.0]))
    assert found.mean == 2 and found.low < 2 < found.high and found.n == 3
    assert paired.interval(np.array([1.0])) is None
    apart = paired.difference(np.array([10.0, 10.5, 11.0]), np.array([1.0, 1.5, 2.0]))
    assert apart.low > 0 and apart.mean == pytest.approx(9)


def test_a_message_too_large_for_the_hosts_memory_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(config, "available_memory", lambda: 64 << 20)
    made = config.make_config("x", profile="caches")
    with pytest.raises(CopylabError) as refused:
        config.check_memory_limit(made)
    assert str(refused.value).startswith("sizes: 67108864 B messages need about 192 MiB")
    assert "\n" not in str(refused.value)
    monkeypatch.setattr(config, "available_memory", lambda: 1 << 40)
    config.check_memory_limit(made)


def test_answer_2_counts_misses_where_the_host_counts_them(grid, monkeypatch):
    """On a host with a PMU the answer is the counted reduction per KiB, two_copy's sender misses minus one_copy's."""
    trials = grid.trials.copy()
    kib = trials["bytes"] / 1024
    copies = trials["implementation"].map({"two_copy": 2.0, "one_copy": 1.0})
    trials["snd_l1d_load_misses"] = 32 * copies * kib  # the packing copy's 32 L1d misses per KiB, on top
    trials["snd_llc_load_misses"] = 1 * copies * kib
    monkeypatch.setattr(caches, "measured", lambda sweep, metric: True)
    text = caches.answer_q2(grid, dataclasses.replace(grid, trials=trials))
    assert text.startswith("**Claim.** The L1 data cache: removing `two_copy`'s packing copy removed 32.0")
    assert caches.q2(grid, dataclasses.replace(grid, trials=trials)).sure == "settled by the intervals."
