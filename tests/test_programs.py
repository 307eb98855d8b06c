"""The C programs: verified runs of every variant in namespaces, bad input, sanitizer builds."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from copylab import netns
from copylab.build import build
from tests.conftest import run_in

VARIANTS = ("two_copy", "one_copy", "zero_copy")
PORT = 5401


def run_pair(
    bin_dir: Path,
    pair: netns.NamespacePair,
    variant: str,
    mode: str,
    size: int,
    threads: int = 2,
    duration: float = 0.3,
    extra: tuple[str, ...] = ("--verify",),
) -> tuple[dict, dict]:
    server = subprocess.Popen(
        [
            *netns.exec_prefix(pair.server),
            str(bin_dir / f"{variant}_server"),
            "--bind",
            pair.server_address,
            "--port",
            str(PORT),
            "--size",
            str(size),
            "--mode",
            mode,
            "--timeout",
            "20",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        client = run_in(
            pair.client,
            [
                str(bin_dir / f"{variant}_client"),
                "--connect",
                pair.server_address,
                "--port",
                str(PORT),
                "--size",
                str(size),
                "--mode",
                mode,
                "--threads",
                str(threads),
                "--duration",
                str(duration),
                "--warmup",
                "0.1",
                *extra,
            ],
        )
        server_out, server_err = server.communicate(timeout=20)
    finally:
        server.kill()
        server.wait()
    assert client.returncode == 0, client.stderr
    assert server.returncode == 0, server_err
    for stderr in (client.stderr, server_err):
        assert "Sanitizer" not in stderr and "runtime error" not in stderr, stderr
    return json.loads(server_out), json.loads(client.stdout)


def check_results(server: dict, client: dict, variant: str, mode: str, size: int, threads: int) -> None:
    for result, role in ((server, "server"), (client, "client")):
        assert result["role"] == role
        assert result["variant"] == variant and result["mode"] == mode
        assert result["size"] == size and result["threads"] == threads
        assert result["cpu_user_s"] + result["cpu_sys_s"] > 0
    assert 0.25 < client["measured_s"] < 0.6
    assert client["bytes"] > 0 and client["messages"] > 0
    assert client["throughput_gbps"] == pytest.approx(client["bytes"] * 8 / client["measured_s"] / 1e9, rel=1e-6)
    if mode == "rr":
        assert client["bytes"] == client["messages"] * size
        assert 0 < client["latency_p50_us"] <= client["latency_p99_us"] <= client["latency_max_us"]
        assert client["latency_mean_us"] <= client["latency_max_us"]
    else:
        assert client["latency_p50_us"] is None
    if variant == "zero_copy":
        assert server["zc_sends"] >= client["messages"] > 0
        assert server["zc_completed"] == server["zc_sends"], "every zero-copy send must be completed"
        assert 0 <= server["zc_copied"] <= server["zc_completed"]
        assert 0 < server["zc_notifications"] <= server["zc_completed"]
    else:
        assert server["zc_sends"] is None and server["zc_copied"] is None


@pytest.mark.parametrize("mode", ["stream", "rr"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_runs_verified(bin_dir, pair, variant, mode):
    # 1003 bytes: fields of 125 bytes and a last field holding the remainder.
    size = 1003
    server, client = run_pair(bin_dir, pair, variant, mode, size)
    check_results(server, client, variant, mode, size, 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_large_messages_verified(bin_dir, pair, variant):
    """1 MiB messages: many short sends per message and, for zero-copy, a two-slot-deep ring."""
    server, client = run_pair(bin_dir, pair, variant, "stream", 1 << 20, threads=3)
    check_results(server, client, variant, "stream", 1 << 20, 3)


def test_zero_copy_copied_on_local_delivery(bin_dir, pair):
    """Over veth the kernel copies zero-copy data on delivery and flags the completions.

    Sends still queued when the client resets the connection are freed undelivered, so
    they complete without the flag: nearly all, not all, completions say copied."""
    server, _ = run_pair(bin_dir, pair, "zero_copy", "stream", 65536, threads=1)
    assert server["zc_completed"] > 0
    assert server["zc_copied"] >= 0.9 * server["zc_completed"]


def test_zero_copy_survives_enobufs(bin_dir):
    """A tiny optmem_max makes sends fail with ENOBUFS: they are retried, the data stays intact."""
    tiny = netns.NamespacePair("cltest_enobufs_s", "cltest_enobufs_c", optmem_max=2048)
    with netns.namespace_pair(tiny):
        server, client = run_pair(bin_dir, tiny, "zero_copy", "stream", 65536, threads=2)
    check_results(server, client, "zero_copy", "stream", 65536, 2)
    assert server["zc_enobufs"] > 0


# Every bad input must end the program within 5 s (no hang, no waiting on the network). A guard, not a
# speed test: subprocess raises TimeoutExpired, failing the test, only for a program that is still running.
HANG_GUARD_S = 5


def _run(bin_dir: Path, program: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / program), *args], capture_output=True, text=True, timeout=HANG_GUARD_S)


CLIENT = ("--connect", "127.0.0.1", "--port", "5999")
SERVER = ("--bind", "127.0.0.1", "--port", "5999")
BAD_INPUT = [
    ("client", (*CLIENT, "--size", "abc"), 2, "--size: 'abc' is not a positive whole number"),
    ("client", (*CLIENT, "--size", "0"), 2, "--size: 0 is out of range"),
    ("client", (*CLIENT, "--size", "-5"), 2, "--size: '-5' is not a positive whole number"),
    ("client", (*CLIENT, "--size", "65M"), 2, "--size: 65M is out of range"),
    ("client", (*CLIENT, "--size", "7"), 2, "--size: 7 is out of range"),
    ("client", (*CLIENT, "--size", "99999999999999999999999"), 2, "is not a positive whole number"),
    ("client", (*CLIENT, "--size", "64", "--threads", "0"), 2, "--threads: 0 is out of range"),
    ("client", (*CLIENT, "--size", "64", "--threads", "x"), 2, "--threads: 'x' is not"),
    ("client", (*CLIENT, "--size", "64", "--threads", "65"), 2, "--threads: 65 is out of range"),
    ("client", (*CLIENT, "--size", "64", "--duration", "0"), 2, "--duration: 0 is out of range"),
    ("client", (*CLIENT, "--size", "64", "--duration", "-1"), 2, "--duration: -1 is out of range"),
    ("client", (*CLIENT, "--size", "64", "--duration", "nan"), 2, "--duration: 'nan' is not a number"),
    ("client", (*CLIENT, "--size", "64", "--warmup", "ten"), 2, "--warmup: 'ten' is not a number"),
    ("client", (*CLIENT, "--size", "64", "--mode", "bulk"), 2, "--mode: 'bulk' is neither"),
    ("client", (*CLIENT, "--size", "64", "--bogus"), 2, "unknown option '--bogus'"),
    ("client", (*CLIENT, "--size", "64", "extra"), 2, "unexpected argument 'extra'"),
    ("client", (*CLIENT, "--size"), 2, "--size needs a value"),
    ("client", ("--port", "5999", "--size", "64"), 2, "--connect ADDR is required"),
    ("client", ("--connect", "127.0.0.1", "--port", "0", "--size", "64"), 2, "--port: 0 is out of range"),
    ("client", ("--connect", "127.0.0.1", "--port", "70000", "--size", "64"), 2, "--port: 70000 is out of range"),
    ("client", ("--connect", "example.org", "--port", "5999", "--size", "64"), 2, "is not an IPv4 or IPv6"),
    ("client", ("--connect", "300.1.1.1", "--port", "5999", "--size", "64"), 2, "is not an IPv4 or IPv6"),
    ("server", (*SERVER,), 2, "--size S is required"),
    ("server", (*SERVER, "--size", "64", "--threads", "2"), 2, "unknown option '--threads'"),
    ("server", ("--bind", "1.2.3", "--port", "5999", "--size", "64"), 2, "is not an IPv4 or IPv6"),
    ("server", (*SERVER, "--size", "64", "--timeout", "0"), 2, "--timeout: 0 is out of range"),
]


@pytest.mark.parametrize("role,args,code,message", BAD_INPUT, ids=[" ".join(row[1][4:]) or row[0] for row in BAD_INPUT])
@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_input(bin_dir, variant, role, args, code, message):
    result = _run(bin_dir, f"{variant}_{role}", *args)
    assert result.returncode == code
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("copylab: error: ")
    assert message in result.stderr


def test_port_in_use(bin_dir):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _run(bin_dir, "one_copy_server", "--bind", "127.0.0.1", "--port", str(port), "--size", "64")
    assert result.returncode == 1
    assert "Address already in use" in result.stderr and result.stderr.count("\n") == 1


def test_server_not_there(bin_dir):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    result = _run(bin_dir, "two_copy_client", "--connect", "127.0.0.1", "--port", str(free_port), "--size", "64")
    assert result.returncode == 1
    assert "cannot connect" in result.stderr and result.stderr.count("\n") == 1


def test_server_gives_up_without_client(bin_dir):
    result = _run(
        bin_dir, "zero_copy_server", "--bind", "127.0.0.1", "--port", "5998", "--size", "64", "--timeout", "0.5"
    )
    assert result.returncode == 1 and "waiting for the client timed out" in result.stderr


@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_sanitized_smoke_runs(pair, sanitizer):
    """ASan+UBSan and TSan builds run every variant in both modes without a report."""
    sanitized = build(sanitizer) / "bin"
    for variant in VARIANTS:
        for mode in ("stream", "rr"):
            server, client = run_pair(sanitized, pair, variant, mode, 4099, threads=3)
            check_results(server, client, variant, mode, 4099, 3)
