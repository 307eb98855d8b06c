"""The sink path (--path sink) and the settings of issue 37, each followed from the command line to a row."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from copylab.cli.commands import COMMANDS
from copylab.declarations import config, settings
from copylab.declarations.config import SweepConfig
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.running.spec import TrialSettings
from copylab.record.store import SweepStore
from copylab.report.sections import setup
from copylab.testbeds import netns, sink, testbed
from tests.conftest import needs_root

TAG = os.getpid() % 100000
NAMESPACES = (f"clsink{TAG}_s", f"clsink{TAG}_c")
ZERO_COPY = ("zero_copy", "uring_send_zc")


def sink_sweep(name: str, **changes) -> SweepConfig:
    given = dict(
        path="sink",
        implementations=["two_copy", "one_copy", *ZERO_COPY],
        sizes=[1024, 65536],
        threads=[1],
        trials=1,
        # short windows: the rows' counts and flags are held, not how fast the sink takes them
        duration_s=0.05,
        warmup_s=0.02,
        namespaces=list(NAMESPACES),
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    )
    given.update(changes)
    return config.make_config(name, "quick", **given)


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


@needs_root
@pytest.mark.parametrize("mtu", [1500, 65535])
def test_a_sink_sweep_records_no_copied_completion(tmp_path, mtu):
    result = sweep.run(sink_sweep("sink", mtu=mtu), SweepStore.under(tmp_path, "sink"), progress=False)
    rows = rows_of(tmp_path / "sink" / "trials.csv")
    assert result.ok == len(rows) == 8, [row["error"] for row in rows]
    for row in rows:
        assert row["path"] == "sink" and row["workload"] == "stream" and row["receive"] == "copy"
        datagrams, size = int(row["sink_datagrams"]), int(row["size_bytes"])
        assert datagrams > 0 and float(row["throughput_gbps"]) > 0
        # The bytes are the device's count of datagrams, each message leaving as whole datagrams.
        assert int(row["bytes"]) <= datagrams * size
        if row["implementation"] in ZERO_COPY:
            assert int(row["zc_completed"]) == int(row["zc_sends"]) > 0
            assert int(row["zc_copied"]) == 0
        else:
            assert row["zc_sends"] == ""
        # A datagram longer than the MTU carries is segmented (UDP_SEGMENT), never fragmented: flagged per row.
        # (a 64 KiB message of 8 fields goes as datagrams of 5 and 3 fields, each under 64 KiB)
        segmented = mtu == 1500 and size > 1472
        assert int(row["sink_segment_bytes"]) == (mtu - 28 if segmented else 0)
    assert SweepStore(tmp_path / "sink").read_manifest().parameters.path == "sink"
    assert not set(NAMESPACES) & netns.existing_namespaces()


@pytest.mark.parametrize(
    "changes,says",
    [
        ({"workloads": ["stream", "rr"]}, "the workload is stream only"),
        ({"receive": ["copy", "mmap"]}, "no receive mode to choose"),
        ({"implementations": ["two_copy", "sendfile"]}, "sendfile cannot send there"),
        ({"implementations": ["read_send", "iperf3"]}, "read_send, iperf3 cannot send there"),
        # client.c starts no receiver on the sink: a verified sink sweep would claim bytes nobody checked
        ({"verify": True}, "--verify: nothing arrives on the sink"),
    ],
)
def test_what_the_sink_cannot_do_is_refused_in_one_line_before_anything_is_made(tmp_path, changes, says):
    config_ = sink_sweep("refused", **changes)
    with pytest.raises(CopylabError) as refused:
        sweep.run(config_, SweepStore.under(tmp_path, config_.name), progress=False)
    assert str(refused.value).startswith("path sink: ") and says in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "refused").exists() and not set(NAMESPACES) & netns.existing_namespaces()


def test_the_servers_experiment_refuses_the_sink():
    with pytest.raises(CopylabError, match="path: the servers experiment answers requests over the veth pair"):
        config.make_config("x", experiment="servers", path="sink")


def test_a_profile_on_the_sink_streams_and_receives_by_copy():
    chosen = config.make_config("x", "quick", path="sink", namespaces=list(NAMESPACES))
    assert chosen.workloads == ("stream",) and chosen.receive == ("copy",)
    assert sink.refusal(config.make_config("x", "quick", path="sink", implementations=["zero_copy"])) is None


def _run_sweep_help(option: str) -> str:
    """The help of run-sweep's OPTION in the command table both front ends are built from (tests/test_cli.py holds
    them to it; invoke's own help dict empties as it builds its arguments, so it is not read here)."""
    command = next(command for command in COMMANDS if command.name == "run-sweep")
    return next(choice.help for choice in command.options if choice.name == option)


def test_path_reaches_the_command_line_toml_manifest_row_and_programs(tmp_path):
    assert "blackhole" in _run_sweep_help("path")
    toml = tmp_path / "sweep.toml"
    toml.write_text('path = "sink"\nimplementations = ["zero_copy"]\n')
    chosen = config.make_config("x", "quick", sweep_file=toml)
    assert chosen.path == "sink" and chosen.parameters()["path"] == "sink"
    bed = testbed.Namespaces(netns.NamespacePair("a", "b", sink=True), "x")
    trial = TrialSettings("x", bed, None, 1.0, 0.3, values=settings.per_trial(chosen))  # type: ignore[arg-type]
    assert trial.columns()["path"] == "sink"
    for role in ("server", "client"):
        arguments = trial.program_arguments(role)
        assert arguments[arguments.index("--path") + 1] == "sink"
    # On the sink both programs run in the server's namespace, where the sink device is.
    assert bed.client.namespace == bed.server.namespace == "a"


def test_distinct_messages_reaches_the_command_line_toml_manifest_row_and_the_server(tmp_path):
    assert "cycles through" in _run_sweep_help("distinct_messages")
    toml = tmp_path / "sweep.toml"
    toml.write_text("distinct_messages = 4096\n")
    chosen = config.make_config("x", "quick", sweep_file=toml)
    assert chosen.distinct_messages == 4096 and chosen.parameters()["distinct_messages"] == 4096
    assert config.make_config("x", "quick").distinct_messages == settings.get("distinct_messages").default == 1
    bed = testbed.Namespaces(netns.NamespacePair("a", "b"), "x")
    trial = TrialSettings("x", bed, None, 1.0, 0.3, values=settings.per_trial(chosen))  # type: ignore[arg-type]
    assert trial.columns()["distinct_messages"] == 4096
    server = trial.program_arguments("server")
    assert server[server.index("--distinct-messages") + 1] == "4096"
    assert "--distinct-messages" not in trial.program_arguments("client")
    with pytest.raises(CopylabError, match="distinct-messages: 0 is out of range"):
        config.make_config("x", "quick", distinct_messages=0)


@needs_root
def test_cold_messages_run_on_both_paths_and_are_verified_where_they_arrive(tmp_path):
    """On the veth the client checks every byte of the 64 cold messages; the sink has no receiver, so its half
    runs the same messages unverified (and --verify there is refused, above)."""
    cold = dict(implementations=["two_copy", "zero_copy"], sizes=[4096], distinct_messages=64)
    cold.update(workloads=["stream"], receive=["copy"])
    for path, verify in (("veth", True), ("sink", False)):
        name = f"cold-{path}"
        config = sink_sweep(name, path=path, verify=verify, **cold)
        result = sweep.run(config, SweepStore.under(tmp_path, name), progress=False)
        rows = rows_of(tmp_path / name / "trials.csv")
        assert result.ok == len(rows) == 2, [row["error"] for row in rows]
        assert {row["distinct_messages"] for row in rows} == {"64"}
        assert SweepStore(tmp_path / name).read_manifest().parameters.verify is verify


def test_the_report_says_per_sweep_what_was_verified():
    verified = config.make_config("x", "quick", verify=True, receive=["copy", "mmap"])
    assert (
        setup._verification(verified) == "on: every byte received checked against its pattern (copy and mmap receives)"
    )
    assert setup._verification(config.make_config("x", "quick")) == "off"
    sink_sweep_ = config.make_config("x", "quick", path="sink", implementations=["zero_copy"])
    assert setup._verification(sink_sweep_) == "none: nothing arrives on the sink (no receiver runs there)"
