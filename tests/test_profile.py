"""The sampled profile (issue 53): perf script's samples charged to a trial, a side and a category, the table of
categories, and the profile stored with the sweep or the one line that says why there is none."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from copylab.declarations.profiling.categories import CATEGORIES, CATEGORY_NAMES, SIDES
from copylab.measure.running.profiling import cpu_set
from copylab.programs import sampler
from copylab.programs.profile_reader import Classifier, TrialWindow, attribute, comm_of, samples
from copylab.record.store import SweepStore

# perf script -F comm,tid,cpu,time,ip,sym --ns, as perf 6.1 prints it (comm right-aligned on 16 columns).
SCRIPT = """\
zero_copy_serve  1001 [000]   100.000000100:
\tffffffff81b6ccb0 memcpy_orig
\tffffffff81a00000 skb_copy_ubufs
\tffffffff81a00001 __netif_receive_skb_core
\tffffffff81a00002 net_rx_action
\tffffffff81a00003 handle_softirqs
\tffffffff81a00004 tcp_sendmsg

zero_copy_serve  1001 [000]   100.000200000:
\tffffffff81b6ccb1 gup_fast_fallback
\tffffffff81b6ccb2 pin_user_pages_fast
\tffffffff81b6ccb3 iov_iter_extract_pages
\tffffffff81b6ccb4 tcp_sendmsg_locked

zero_copy_clien  1002 [000]   100.000300000:
\tffffffff81b6ccb5 _copy_to_iter
\tffffffff81b6ccb6 tcp_recvmsg

two_copy_server  1003 [000]   100.000400000:
\t           1469e __memmove_avx_unaligned_erms
\t               0 [unknown]

two_copy_server  1003 [001]   100.000450000:
\t           1469e __memmove_avx_unaligned_erms

     swapper/0     0 [000]   100.000500000:
\tffffffff821f0000 pv_native_safe_halt
\tffffffff821f0001 default_idle_call

ksoftirqd/0    15 [000]   100.000600000:
\tffffffff821f0002 tcp_v4_rcv

zero_copy_serve  1001 [000]   100.000700000:
\tffffffff821f0003 some_new_function

zero_copy_serve  1001 [000]   100.900000000:
\tffffffff821f0003 tcp_sendmsg
"""

ZC = TrialWindow("zc", 100_000_000_000, 100_000_350_000, "zero_copy_serve", "zero_copy_clien", frozenset({0}))
TWO = TrialWindow("two", 100_000_350_001, 100_000_800_000, "two_copy_server", "two_copy_clien", frozenset({0}))


def _counts(frame: pd.DataFrame) -> dict[tuple[str, str, str], int]:
    return {(r.trial_id, r.side, r.category): r.samples for r in frame.itertuples()}


def test_samples_are_read_whole_with_their_time_cpu_and_frames():
    read = list(samples(SCRIPT.splitlines()))
    assert len(read) == 9
    assert read[0].comm == "zero_copy_serve" and read[0].cpu == 0 and read[0].time_ns == 100_000_000_100
    assert read[0].frames[1] == (True, "skb_copy_ubufs")
    assert read[3].frames[0] == (False, "__memmove_avx_unaligned_erms")
    assert read[5].comm == "swapper/0"


def test_each_sample_is_charged_to_its_trial_side_and_category():
    profile = attribute(SCRIPT.splitlines(), [TWO, ZC])
    counts = _counts(profile.table())
    assert counts == {
        # the memcpy of skb_copy_ubufs is the deferred copy, and it ran in softirq context
        ("zc", "softirq", "deferred_copy"): 1,
        ("zc", "sender", "pinning"): 1,
        ("zc", "receiver", "kernel_copy"): 1,
        ("two", "sender", "user_copy"): 1,  # the sample on CPU 1, not the trial's, is dropped
        ("two", "other", "idle"): 1,
        ("two", "softirq", "tcp_ip"): 1,
        ("two", "other", "other"): 1,  # a zero_copy_serve thread in two_copy's window is not its sender
    }
    # the function no category claims is counted and listed, never dropped; the sample after every window is
    assert profile.symbols().to_dict("records") == [{"function": "some_new_function", "samples": 1}]


def test_shares_add_up_per_trial_and_a_trial_without_samples_keeps_a_row():
    empty = TrialWindow("empty", 200_000_000_000, 200_000_100_000, "a", "b", None)
    table = attribute(SCRIPT.splitlines(), [ZC, TWO, empty]).table()
    shares = table.groupby("trial_id")["share"].sum()
    assert shares["zc"] == pytest.approx(1.0) and shares["two"] == pytest.approx(1.0)
    row = table[table["trial_id"] == "empty"]
    assert row["samples"].tolist() == [0] and row["share"].isna().all()
    assert set(table["side"]) <= set(SIDES) and set(table["category"]) <= set(CATEGORY_NAMES)


def test_thread_names_are_cut_as_the_kernel_cuts_them():
    assert comm_of("/x/build/bin/zero_copy_client") == "zero_copy_clien"
    assert comm_of("two_copy_server") == "two_copy_server"


def test_the_categories_are_distinct_and_each_claims_something():
    assert len(set(CATEGORY_NAMES)) == len(CATEGORY_NAMES)
    for category in CATEGORIES:
        assert category.leaves or category.callers, category.name
    # Named functions of the issue land where it says they belong.
    classifier = Classifier()
    expected = {
        "copy_user_enhanced_fast_string": "kernel_copy",
        "_copy_from_iter": "kernel_copy",
        "__alloc_skb": "skb",
        "kmem_cache_alloc_node": "memory",
        "_raw_spin_lock_bh": "locks",
        "try_to_wake_up": "scheduling",
        "entry_SYSCALL_64_after_hwframe": "syscall",
        "veth_xmit": "device",
        "tcp_ack": "tcp_ip",
    }
    for function, category in expected.items():
        assert classifier._leaf(True, function) == category, function
    assert classifier._leaf(True, "some_new_function") == "other"
    assert classifier._leaf(False, "main") == "user_other"


def test_cpu_lists_become_sets_and_no_affinity_means_every_cpu():
    assert cpu_set(("0", "0")) == frozenset({0})
    assert cpu_set(("0", "1,2")) == frozenset({0, 1, 2})
    assert cpu_set(("0", None)) is None


def test_without_root_the_sampler_says_why_in_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    why = sampler.refusal(local=True, root=True)
    assert why is not None and "root" in why and "\n" not in why
    assert "two hosts" in (sampler.refusal(local=False, root=True) or "")


def test_the_store_keeps_the_profile_or_the_line_that_says_why(tmp_path: Path):
    store = SweepStore(tmp_path / "sweep", figures_root=tmp_path / "figures", data_root=tmp_path)
    store.directory.mkdir()
    store.write_unsampled("sampling the kernel needs root")
    assert store.read_profile() == "not sampled: sampling the kernel needs root"
    profile = attribute(SCRIPT.splitlines(), [ZC])
    store.write_profile(profile.table(), profile.symbols())
    first = store.read_profile()
    assert isinstance(first, pd.DataFrame) and set(first["trial_id"]) == {"zc"}
    # A resumed sweep adds its trials' rows to the earlier run's
    later = attribute(SCRIPT.splitlines(), [TWO])
    store.write_profile(later.table(), later.symbols())
    both = store.read_profile()
    assert isinstance(both, pd.DataFrame) and set(both["trial_id"]) == {"zc", "two"}
    assert both["samples"].dtype == "int64"


def test_a_sampler_that_stops_answering_is_given_up_and_the_trials_go_on(capsys):
    from copylab.errors import CopylabError
    from copylab.measure.running.profiling import SweepSampler
    from copylab.programs.sampler import Sampler, SamplerUse

    class Silent(Sampler):
        def enable(self) -> None:
            raise CopylabError("perf record did not acknowledge 'enable' within 5 s")

    sampled = SweepSampler(SamplerUse(True), Silent(Path("/nonexistent"), "0"))
    ran = []
    for trial in ("a", "b"):
        with sampled.around_trial():
            ran.append(trial)
        sampled.note(trial, (1, 2), ("x_server", "x_client"), None)
    assert ran == ["a", "b"] and sampled.failure is not None and sampled.windows == []
    assert "given up" in capsys.readouterr().err
