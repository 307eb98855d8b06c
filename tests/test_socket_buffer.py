"""The socket buffers as a setting: a size the kernel would not hold as asked is refused before anything runs,
every connection gets the size the sweep chose and the kernel is checked to hold it, and a trial whose programs
were not told fails instead of giving a row under the kernel's own sizing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from copylab.declarations import config, implementations
from copylab.declarations.settings import socket_buffer
from copylab.errors import CopylabError
from copylab.measure.running.drivers import _iperf3_socket_buffer
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import run_trial
from copylab.programs.perf import PerfSupport
from copylab.testbeds import congestion, netns, testbed

CAPS = {"send": 212992, "receive": 212992}


@pytest.mark.parametrize(
    ("asked", "why"),
    [
        (100, "socket-buffer: 100 is below the 4096 bytes the kernel grants as asked"),
        ((1 << 29) + 1, "socket-buffer: 536870913 is out of range"),
        (-1, "socket-buffer: -1 is out of range"),
    ],
)
def test_a_size_the_kernel_would_not_hold_is_refused_in_one_line(asked, why):
    with pytest.raises(CopylabError, match=why):
        config.make_config("b", "quick", socket_buffer=asked)


def test_the_programs_refuse_it_too(bin_dir):
    result = subprocess.run(
        [str(bin_dir / "two_copy_server"), "--socket-buffer", "100"], capture_output=True, text=True, timeout=10
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "copylab: error: --socket-buffer: 100 is below the 4096 bytes the kernel grants as asked (0 leaves the "
        "buffers to the kernel)"
    ]


def test_without_cap_net_admin_a_size_above_the_caps_is_refused_naming_the_cap():
    why = socket_buffer.refusal(1 << 20, CAPS, "client host h")
    assert why is not None and why.startswith("--socket-buffer 1048576: the client host h caps a send buffer at 212992")
    assert "net.core.wmem_max" in why
    assert socket_buffer.refusal(1 << 20, None, "h") is None, "root passes over the caps"
    assert socket_buffer.refusal(212992, CAPS, "h") is None
    assert socket_buffer.refusal(0, CAPS, "h") is None and socket_buffer.refusal(None, CAPS, "h") is None


def test_unless_told_a_sweep_takes_the_preferred_size_within_the_caps():
    assert socket_buffer.within(None) == socket_buffer.PREFERRED
    assert socket_buffer.within({"send": 4 << 20, "receive": 300000}) == 300000


def test_trial_settings_take_the_testbeds_choice_unless_told(capsys):
    class Capped(testbed.Namespaces):
        def socket_buffer_caps(self) -> dict[str, int] | None:
            return CAPS

    bed = Capped(netns.NamespacePair("a", "b"), "x")  # made, never brought up
    assert TrialSettings("x", bed, PerfSupport(False, None), 0.2, 0.1).value("socket_buffer") == 212992
    assert "socket buffers of 212992 bytes, not 1048576" in capsys.readouterr().err
    told = TrialSettings("x", bed, PerfSupport(False, None), 0.2, 0.1, values={"socket_buffer": 0})
    assert told.value("socket_buffer") == 0


def test_iperf3s_buffers_are_what_its_json_says_it_got():
    assert _iperf3_socket_buffer({"sock_bufsize": 0, "sndbuf_actual": 16384, "rcvbuf_actual": 131072}) == 0
    got = {"sock_bufsize": 1 << 20, "sndbuf_actual": 2 << 20, "rcvbuf_actual": 2 << 20}
    assert _iperf3_socket_buffer(got) == 1 << 20
    # asked for 8 MiB under a 4 MiB cap: the kernel held twice the cap, and the row says so
    capped = {"sock_bufsize": 8 << 20, "sndbuf_actual": 8 << 20, "rcvbuf_actual": 8 << 20}
    assert _iperf3_socket_buffer(capped) == 4 << 20


def _trial(pair, name: str, values: dict[str, object]) -> dict[str, object]:
    bed = testbed.Namespaces(pair, name)
    settings = TrialSettings(name, bed, PerfSupport(False, None), 0.2, 0.1, values={"socket_buffer": 0, **values})
    # the session's namespaces as they are: bed.running() would make its own and remove them after
    return run_trial(TrialSpec(name, 0, implementations.get("two_copy"), "stream", 16384, 1, "same_cpu", 1), settings)


def test_every_connection_gets_the_size_asked_for_and_the_kernel_holds_it_doubled(pair):
    row = _trial(pair, "buffer-fixed", {"socket_buffer": 256 << 10})
    assert row["status"] == "ok", row.get("error")
    assert row["socket_buffer_bytes"] == 256 << 10
    assert row["snd_send_buffer_bytes"] == row["rcv_receive_buffer_bytes"] == 512 << 10


def test_left_to_the_kernel_the_row_records_what_it_grew_the_buffers_to(pair):
    row = _trial(pair, "buffer-kernel", {"socket_buffer": 0})
    assert row["status"] == "ok", row.get("error")
    assert row["socket_buffer_bytes"] == 0
    # a connection starts at net.ipv4.tcp_rmem's and tcp_wmem's middle values; a stream grows them from there
    start = {}
    for name in ("tcp_rmem", "tcp_wmem"):
        read = subprocess.run(
            ["ip", "netns", "exec", pair.client, "cat", f"/proc/sys/net/ipv4/{name}"],
            capture_output=True,
            text=True,
            check=True,
        )
        start[name] = int(read.stdout.split()[1])
    assert row["rcv_receive_buffer_bytes"] >= start["tcp_rmem"]
    assert row["snd_send_buffer_bytes"] >= start["tcp_wmem"]


def test_a_trial_whose_programs_were_not_told_fails_rather_than_record_the_wrong_buffers(pair, monkeypatch):
    monkeypatch.setattr(TrialSettings, "program_arguments", lambda self, role: [])
    # untold, the programs also leave the congestion control to the host: ask for that, so that only the buffers differ
    host_default = Path(congestion.DEFAULT).read_text().strip()
    row = _trial(pair, "buffer-untold", {"socket_buffer": 1 << 20, "congestion_control": host_default})
    assert row["status"] == "failed"
    assert row["error"] == "ran socket_buffer_bytes 0, the sweep asked for 1048576"
