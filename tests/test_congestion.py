"""The TCP congestion control as a setting: refused where an end cannot use it, set on every connection of a
trial (copylab's programs and iperf3 alike), read back and recorded per row, and a trial whose ends used another
one fails instead of giving a row under the wrong transport."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from copylab.declarations import config, contract, implementations
from copylab.declarations.settings import socket_buffer
from copylab.measure import sweep
from copylab.measure.running.drivers import CopylabPrograms, TrialFailed
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import run_trial
from copylab.programs.perf import PerfSupport
from copylab.record.store import SweepStore
from copylab.testbeds import congestion, testbed
from copylab.vocabulary.implementation import program_pair
from tests.conftest import needs_root

TAG = os.getpid() % 100000
NAMESPACES = (f"clcc{TAG}_s", f"clcc{TAG}_c")
HOST_DEFAULT = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
# reno is always built in (the kernel's fallback); a sweep asking for it differs from the host's default unless
# the host chose reno itself.
ASKED = "reno"


def test_an_algorithm_the_kernel_does_not_offer_is_refused_naming_those_it_does():
    why = congestion.refusal("vegas", "reno cubic bbr\n", "reno cubic", True, "server host h")
    assert why == "--congestion-control vegas: the server host h offers reno, cubic, bbr"


def test_without_cap_net_admin_only_an_allowed_algorithm_passes():
    assert congestion.refusal("bbr", "reno cubic bbr", "reno cubic", True, "h") is None
    why = congestion.refusal("bbr", "reno cubic bbr", "reno cubic", False, "client host h")
    assert why is not None and "allows only reno, cubic without CAP_NET_ADMIN" in why
    assert congestion.refusal("cubic", "reno cubic bbr", "reno cubic", False, "h") is None


def _result(program: str, **given: object) -> str:
    """A well-formed JSON result of PROGRAM (a contract role): every declared key, GIVEN's values where named."""
    values = {"int": 1, "float": 1.0, "str": "x"}
    return json.dumps({key.name: given.get(key.name, values[key.kind]) for key in contract.RESULTS[program]})


def test_a_trial_whose_ends_used_different_algorithms_fails():
    driver = CopylabPrograms(program_pair("two_copy"))
    spec = TrialSpec("t", 0, implementations.get("two_copy"), "stream", 1024, 1, "same_cpu", 1)
    asked = dict(variant="two_copy", mode="stream", size=1024, threads=1, layout="fields")
    server = _result("server", role="server", congestion_control="cubic", **asked)
    client = _result("client", role="client", receive="copy", congestion_control="reno", **asked)
    with pytest.raises(TrialFailed, match="ran congestion_control 'reno', the other side 'cubic'"):
        driver.measurement(spec, server, client)
    same = _result("client", role="client", receive="copy", congestion_control="cubic", **asked)
    assert driver.measurement(spec, server, same)["congestion_control"] == "cubic"


@needs_root
@pytest.mark.skipif(HOST_DEFAULT == ASKED, reason=f"the host's default is {ASKED} already")
def test_every_connection_of_a_sweep_uses_the_algorithm_it_asked_for(tmp_path):
    settings = config.make_config(
        "cc",
        "quick",
        implementations=["two_copy", "iperf3"],
        workloads=["stream"],
        sizes=[16384],
        threads=[2],
        trials=1,
        duration_s=0.2,
        warmup_s=0.1,
        receive=["copy"],
        namespaces=list(NAMESPACES),
        congestion_control=ASKED,
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    trials, manifest = SweepStore(tmp_path / "cc").load()
    assert result.failed == 0 and set(trials["implementation"]) == {"two_copy", "iperf3"}
    assert set(trials["congestion_control"]) == {ASKED}
    assert manifest.parameters.congestion_control == ASKED
    # and the socket buffers the sweep chose as root, iperf3's (--window) as copylab's
    assert set(trials["socket_buffer_bytes"]) == {socket_buffer.PREFERRED} == {manifest.parameters.socket_buffer}
    assert manifest.host.congestion_default == HOST_DEFAULT


@needs_root
@pytest.mark.skipif(HOST_DEFAULT == ASKED, reason=f"the host's default is {ASKED} already")
def test_a_trial_whose_programs_were_not_told_fails_rather_than_record_the_wrong_transport(pair, monkeypatch):
    bed = testbed.Namespaces(pair, "cc-untold")
    settings = TrialSettings("cc-untold", bed, PerfSupport(False, None), 0.2, 0.1, values={"congestion_control": ASKED})
    monkeypatch.setattr(TrialSettings, "program_arguments", lambda self, role: [])
    row = run_trial(
        TrialSpec("untold", 0, implementations.get("two_copy"), "stream", 16384, 1, "same_cpu", 1), settings
    )
    assert row["status"] == "failed"
    assert row["error"] == f"ran congestion_control {HOST_DEFAULT!r}, the sweep asked for {ASKED!r}"
