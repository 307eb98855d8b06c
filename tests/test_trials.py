"""Loading and validating trials.csv and manifest.json."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from copylab.declarations import schema
from copylab.declarations.metrics import METRICS, add_metrics
from copylab.errors import CopylabError
from copylab.record.origin import ModifiedData
from copylab.record.store import SweepStore
from tests.synthetic import load_sweep, load_trials, make_trials, write_sweep


@pytest.fixture(scope="module")
def trials() -> pd.DataFrame:
    return make_trials(sizes=(1024, 4096), rr_sizes=(64,), threads=(1,), trials=3, failed=2, seed=5)


@pytest.fixture
def sweep(tmp_path, trials):
    return write_sweep(tmp_path / "synthetic", trials)


def _lines(sweep) -> list[str]:
    return (sweep / "trials.csv").read_text().splitlines(keepends=True)


def _rewrite(sweep, lines: list[str]) -> None:
    (sweep / "trials.csv").write_text("".join(lines))


def test_valid_sweep_loads_typed_with_nan_for_unmeasured(sweep, trials):
    loaded, manifest = load_sweep(sweep)
    assert list(loaded.columns) == list(schema.COLUMN_NAMES)
    assert len(loaded) == len(trials) and manifest.sweep == "synthetic"
    assert loaded["size_bytes"].dtype == np.int64
    assert loaded["throughput_gbps"].dtype == np.float64
    assert loaded["snd_cycles"].isna().all()  # empty in the file: NaN, never 0
    assert loaded.loc[loaded["implementation"] != "zero_copy", "zc_sends"].isna().all()
    assert (loaded["status"] == "failed").sum() == 2
    pd.testing.assert_series_equal(loaded["retransmits"], trials["retransmits"].astype("float64"))


def test_missing_column(sweep):
    frame = pd.read_csv(sweep / "trials.csv").drop(columns="throughput_gbps")
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match=r"missing column.*throughput_gbps"):
        load_trials(sweep / "trials.csv")


def test_foreign_column(sweep):
    frame = pd.read_csv(sweep / "trials.csv").assign(goodput_gbps=1.0)
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match=r"unknown column.*goodput_gbps"):
        load_trials(sweep / "trials.csv")


def test_non_numeric_value_names_column_and_line(sweep):
    lines = _lines(sweep)
    header = lines[0].rstrip("\n").split(",")
    fields = lines[3].rstrip("\n").split(",")
    fields[header.index("bytes")] = "12kB"
    lines[3] = ",".join(fields) + "\n"
    _rewrite(sweep, lines)
    with pytest.raises(CopylabError, match=r"line 4: column bytes value '12kB' is not a finite number"):
        load_trials(sweep / "trials.csv")


def test_fractional_count_is_rejected(sweep):
    frame = pd.read_csv(sweep / "trials.csv", dtype=str)
    frame.loc[0, "messages"] = "10.5"
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match=r"line 2: column messages value '10\.5' is not an integer"):
        load_trials(sweep / "trials.csv")


def test_truncated_last_line_without_newline(sweep):
    lines = _lines(sweep)
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    _rewrite(sweep, lines)
    with pytest.raises(CopylabError, match=f"line {len(lines)} has .* fields.*truncated"):
        load_trials(sweep / "trials.csv")


def test_complete_last_line_without_newline_is_still_suspect(sweep):
    lines = _lines(sweep)
    lines[-1] = lines[-1].rstrip("\n")
    _rewrite(sweep, lines)
    with pytest.raises(CopylabError, match=f"line {len(lines)} is truncated"):
        load_trials(sweep / "trials.csv")


def test_short_row_in_the_middle(sweep):
    lines = _lines(sweep)
    lines[2] = lines[2].split(",", 3)[0] + "\n"
    _rewrite(sweep, lines)
    with pytest.raises(CopylabError, match=r"line 3 has 1 fields, the header has"):
        load_trials(sweep / "trials.csv")


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("implementation", "four_copy", "unknown implementation 'four_copy'"),
        ("workload", "bulk", "unknown workload 'bulk'"),
        ("status", "maybe", "unknown status 'maybe'"),
        ("pinning", "cpu7", "unknown pinning 'cpu7'"),
    ],
)
def test_unknown_values(sweep, column, value, message):
    frame = pd.read_csv(sweep / "trials.csv", dtype=str)
    frame.loc[1, column] = value
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match=f"line 3: {message}"):
        load_trials(sweep / "trials.csv")


def test_empty_required_value(sweep):
    frame = pd.read_csv(sweep / "trials.csv", dtype=str)
    frame.loc[0, "size_bytes"] = None
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match="line 2: required column size_bytes is empty"):
        load_trials(sweep / "trials.csv")


def test_no_ok_trials(sweep):
    frame = pd.read_csv(sweep / "trials.csv", dtype=str).assign(status="failed")
    frame.to_csv(sweep / "trials.csv", index=False)
    with pytest.raises(CopylabError, match="no ok trials"):
        load_trials(sweep / "trials.csv")


def test_repeated_trial_id(sweep):
    lines = _lines(sweep)
    _rewrite(sweep, [*lines, lines[1]])
    with pytest.raises(CopylabError, match=f"line {len(lines) + 1}: trial_id .* measured twice"):
        load_trials(sweep / "trials.csv")


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CopylabError, match="no such file"):
        load_trials(tmp_path / "trials.csv")
    (tmp_path / "trials.csv").write_text("")
    with pytest.raises(CopylabError, match="empty file"):
        load_trials(tmp_path / "trials.csv")


def test_manifest_must_exist_and_parse(sweep):
    (sweep / "manifest.json").write_text("{not json")
    with pytest.raises(CopylabError, match="not valid JSON"):
        SweepStore(sweep).read_manifest()
    (sweep / "manifest.json").unlink()
    with pytest.raises(CopylabError, match="no manifest"):
        load_sweep(sweep)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda m: m["parameters"].pop("sizes"), r"sizes: needs at least one value"),
        (lambda m: m.pop("host"), r"key 'host' missing"),
        (lambda m: m["host"].update(cores="two"), r"key 'host.cores' has str 'two', not int"),
        (lambda m: m.update(warp=9), r"unknown key 'warp'"),
        (lambda m: m["parameters"].update(implementations=["four_copy"]), "unknown 'four_copy'"),
    ],
    ids=["no sizes", "no host", "mistyped cores", "foreign key", "unknown implementation"],
)
def test_manifest_is_typed_and_checked(sweep, damage, message):
    manifest = json.loads((sweep / "manifest.json").read_text())
    damage(manifest)
    (sweep / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CopylabError, match=message) as refused:
        SweepStore(sweep).read_manifest()
    assert str(refused.value).startswith(str(sweep / "manifest.json")) and "\n" not in str(refused.value)


def test_manifest_round_trip(sweep):
    store = SweepStore(sweep)
    manifest = store.read_manifest()
    store.write_manifest(manifest)
    assert store.read_manifest() == manifest


def test_file_of_an_older_schema_loads_with_the_new_columns_empty(sweep):
    frame = pd.read_csv(sweep / "trials.csv", dtype=str, keep_default_na=False)
    newer = [column.name for column in schema.COLUMNS if column.since > 1]
    frame.drop(columns=newer).to_csv(sweep / "trials.csv", index=False)
    manifest = json.loads((sweep / "manifest.json").read_text())
    manifest.update(schema_version=1, complete=False)
    (sweep / "manifest.json").write_text(json.dumps(manifest))
    loaded, _ = load_sweep(sweep)
    assert loaded.attrs["absent_columns"] == newer and list(loaded.columns) == list(schema.COLUMN_NAMES)
    for name in newer:
        column = schema.COLUMN_BY_NAME[name]  # what a required column meant before it existed
        if column.legacy_column:
            assert (loaded[name] == loaded[column.legacy_column]).all(), name
        else:
            assert (loaded[name].astype(str) == column.legacy).all() if column.legacy else loaded[name].isna().all(), (
                name
            )
    manifest.update(schema_version=schema.SCHEMA_VERSION)
    (sweep / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CopylabError, match=f"schema version {schema.SCHEMA_VERSION} but trials.csv lacks"):
        load_sweep(sweep)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"sweep": "other"}, "sweep 'other' but trials.csv has sweep"),
        ({"parameters": {"sizes": [1024]}}, "stream size 4096 that the manifest does not list"),
        ({"parameters": {"implementations": ["two_copy", "one_copy"]}}, "implementation zero_copy"),
        ({"parameters": {"threads": [2]}}, "threads 1 that"),
        ({"parameters": {"trials": 2}}, "parameters.trials allow 2 repetitions but trials.csv has 3"),
    ],
)
def test_manifest_disagreeing_with_data(tmp_path, trials, overrides, message):
    sweep = write_sweep(tmp_path / "synthetic", trials, overrides)
    with pytest.raises(CopylabError, match=message):
        load_sweep(sweep)


def test_a_trials_file_changed_since_its_sweep_is_used_and_said_to_be_modified(tmp_path, trials):
    sweep = write_sweep(tmp_path / "synthetic", trials, {"trials_sha256": "0" * 64})
    with pytest.warns(
        ModifiedData, match=r"synthetic: trials.csv has changed since sweep .* the manifest recorded 000000000000"
    ):
        loaded, _ = load_sweep(sweep)
    assert len(loaded) == len(trials)
    origin = SweepStore(sweep).origin()
    assert origin.modified and "modified since its sweep ended" in origin.stamp()


def test_an_unchanged_trials_file_is_not_said_to_be_modified(tmp_path, trials):
    sweep = write_sweep(tmp_path / "synthetic", trials)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModifiedData)
        load_sweep(sweep)
    origin = SweepStore(sweep).origin()
    assert not origin.modified and origin.warning() is None and origin.trials_sha256[:12] in origin.stamp()


def test_incomplete_manifest_skips_checksum(tmp_path, trials):
    sweep = write_sweep(tmp_path / "synthetic", trials, {"complete": False, "trials_sha256": "0" * 64})
    assert len(load_sweep(sweep)[0]) == len(trials)


def test_metrics_keep_nan_and_compute_ratios(trials):
    measured = add_metrics(trials)  # nullable Int64 counts straight from the generator
    ok = measured[measured["status"] == "ok"]
    row = ok.iloc[0]
    cpu = row["snd_cpu_user_s"] + row["snd_cpu_sys_s"] + row["rcv_cpu_user_s"] + row["rcv_cpu_sys_s"]
    assert row["cpu_ns_per_byte"] == pytest.approx(cpu * 1e9 / row["bytes"])
    assert ok["cycles_per_byte"].isna().all() and ok["snd_llc_misses_per_kib"].isna().all()
    zc = ok["implementation"] == "zero_copy"
    assert ok.loc[~zc, "zc_copied_fraction"].isna().all()
    assert (ok.loc[zc, "zc_copied_fraction"] == 1.0).all()
    assert measured.loc[measured["status"] == "failed", list(METRICS)].isna().all().all()


def test_metrics_with_hardware_counters_and_zero_denominators():
    frame = make_trials(sizes=(4096,), workloads=("stream",), threads=(1,), trials=2, hardware_counters=True)
    frame.loc[0, "bytes"] = 0
    measured = add_metrics(frame)
    row = measured.iloc[1]
    assert row["cycles_per_byte"] == pytest.approx((row["snd_cycles"] + row["rcv_cycles"]) / row["bytes"])
    assert row["snd_l1d_misses_per_kib"] == pytest.approx(row["snd_l1d_load_misses"] / (row["bytes"] / 1024))
    assert np.isnan(measured.loc[0, "cpu_ns_per_byte"])  # 0 bytes: NaN, not inf


def test_a_budgeted_sweep_accepts_the_sizes_its_allocator_adds_inside_its_range_only(tmp_path, trials):
    """A budgeted sweep measures sizes inside a crossover's bracket that its grid does not list: inside the grid's
    range they load, outside it they are still refused."""
    sizes = sorted(int(size) for size in set(trials.loc[trials["workload"] == "stream", "size_bytes"]))
    wider = {"sizes": [sizes[0] // 2, sizes[-1] * 2], "budget_s": 100.0, "design": "blocked"}  # every size inside
    loaded, _ = load_sweep(write_sweep(tmp_path / "wider", trials, {"parameters": wider}))
    assert set(loaded["size_bytes"]) >= set(sizes)
    above = {"sizes": [sizes[0] * 2, sizes[-1] * 2], "budget_s": 100.0, "design": "blocked"}  # the smallest below
    with pytest.raises(CopylabError, match=f"stream size {sizes[0]} that the manifest does not list"):
        load_sweep(write_sweep(tmp_path / "above", trials, {"parameters": above}))
