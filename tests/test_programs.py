"""The C programs: verified runs of every sender and receive mode in namespaces, bad input, sanitizer builds."""

from __future__ import annotations

import atexit
import json
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from copylab.declarations import implementations
from copylab.declarations.schema import RECEIVE_MODES
from copylab.programs.build import build
from copylab.testbeds import netns
from copylab.vocabulary.implementation import DriverKind
from tests.conftest import needs_root, run_in

DRIVERS = {
    impl.driver.name: impl.driver
    for impl in implementations.registry().values()
    if impl.driver.kind is DriverKind.PROGRAM_PAIR
}
VARIANTS = tuple(DRIVERS)
ZERO_COPY = tuple(name for name in VARIANTS if implementations.uses_zero_copy(name))
PORT = 5401
# The message files of file-sending servers, one per size, shared by every run of the session (as in a sweep).
FILES = Path(tempfile.mkdtemp(prefix="copylab-test-files-"))
atexit.register(shutil.rmtree, FILES, True)


def run_pair(
    bin_dir: Path,
    pair: netns.NamespacePair,
    variant: str,
    mode: str,
    size: int,
    threads: int = 2,
    duration: float = 0.3,
    extra: tuple[str, ...] = ("--verify",),
    receive: str = "copy",
    server_extra: tuple[str, ...] = (),
) -> tuple[dict, dict]:
    file = ["--file", str(FILES / f"messages-{size}.bin")] if DRIVERS[variant].from_file else []
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
            *file,
            "--timeout",
            "20",
            *server_extra,
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
                "--receive",
                receive,
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


def check_results(
    server: dict, client: dict, variant: str, mode: str, size: int, threads: int, receive: str = "copy"
) -> None:
    for result, role in ((server, "server"), (client, "client")):
        assert result["role"] == role
        assert result["variant"] == variant and result["mode"] == mode
        assert result["size"] == size and result["threads"] == threads
        assert result["cpu_user_s"] + result["cpu_sys_s"] > 0
    assert client["receive"] == receive
    assert 0.25 < client["measured_s"] < 0.6
    assert client["bytes"] > 0 and client["messages"] > 0
    assert client["throughput_gbps"] == pytest.approx(client["bytes"] * 8 / client["measured_s"] / 1e9, rel=1e-6)
    if mode == "rr":
        assert client["bytes"] == client["messages"] * size
        assert 0 < client["latency_p50_us"] <= client["latency_p99_us"] <= client["latency_max_us"]
        assert client["latency_mean_us"] <= client["latency_max_us"]
    else:
        assert client["latency_p50_us"] is None
    if receive == "mmap":
        taken = client["rx_mapped_bytes"] + client["rx_copied_bytes"] + client["rx_copybuf_bytes"]
        assert taken > 0 and (mode == "rr" or taken == client["bytes"])
    else:
        assert client["rx_mapped_bytes"] is None and client["rx_copied_bytes"] is None
        assert client["rx_copybuf_bytes"] is None
    if variant in ZERO_COPY:
        assert server["zc_sends"] >= client["messages"] > 0
        assert server["zc_completed"] == server["zc_sends"], "every zero-copy send must be completed"
        assert 0 <= server["zc_copied"] <= server["zc_completed"]
        assert 0 < server["zc_notifications"] <= server["zc_completed"]
    else:
        assert server["zc_sends"] is None and server["zc_copied"] is None


@pytest.mark.parametrize("receive", RECEIVE_MODES)
@pytest.mark.parametrize("mode", ["stream", "rr"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_runs_verified(bin_dir, pair, variant, mode, receive):
    # 1003 bytes: fields of 125 bytes and a last field holding the remainder.
    size = 1003
    server, client = run_pair(bin_dir, pair, variant, mode, size, receive=receive)
    check_results(server, client, variant, mode, size, 2, receive)


@pytest.mark.parametrize("receive", ["truncate", "mmap"])
@pytest.mark.parametrize("variant", ["sendfile", "uring_send_zc"])
def test_receive_modes_verified_at_odd_sizes(bin_dir, pair, variant, receive):
    """Whole pages, partial pages and a pattern that does not divide them: every byte still checked."""
    for size in (8, 4099, (1 << 20) + 3):
        server, client = run_pair(bin_dir, pair, variant, "stream", size, receive=receive)
        check_results(server, client, variant, "stream", size, 2, receive)


@pytest.mark.parametrize("variant", VARIANTS)
def test_large_messages_verified(bin_dir, pair, variant):
    """1 MiB messages: many short sends per message and, for zero-copy, a two-slot-deep ring."""
    server, client = run_pair(bin_dir, pair, variant, "stream", 1 << 20, threads=3)
    check_results(server, client, variant, "stream", 1 << 20, 3)


@pytest.mark.parametrize("variant", ZERO_COPY)
def test_zero_copy_copied_on_local_delivery(bin_dir, pair, variant):
    """Over veth the kernel copies zero-copy data on delivery and flags the completions.

    Sends still queued when the client resets the connection are freed undelivered, so
    they complete without the flag: nearly all, not all, completions say copied."""
    server, _ = run_pair(bin_dir, pair, variant, "stream", 65536, threads=1)
    assert server["zc_completed"] > 0
    assert server["zc_copied"] >= 0.9 * server["zc_completed"]


@pytest.mark.parametrize("variant", ["zero_copy", "zc_contiguous", "one_copy"])
def test_pages_pinned_per_message_follow_the_layout(bin_dir, pair, variant):
    """A page-aligned 64 KiB message pins 16 pages, whole (contiguous) or as 8 page-aligned fields of 2 pages; 8
    fields from malloc pin at least as many. A sender that pins nothing reports no count, not 0."""
    pages = {}
    for layout in ("fields", "aligned", "contiguous"):
        server, _ = run_pair(bin_dir, pair, variant, "stream", 65536, threads=1, server_extra=("--layout", layout))
        pages[layout] = server["zc_pages_per_message"]
    if not implementations.uses_zero_copy(variant):
        assert pages == {"fields": None, "aligned": None, "contiguous": None}
    elif variant == "zc_contiguous":
        assert pages == {"fields": 16, "aligned": 16, "contiguous": 16}, "one buffer whatever the layout"
    else:
        assert pages["contiguous"] == pages["aligned"] == 16
        assert pages["fields"] >= 16


@pytest.mark.parametrize("asked", ["reno", None])
def test_both_ends_report_the_congestion_control_their_connections_used(bin_dir, pair, asked):
    """Asked for one, every connection uses it; not asked, the kernel's default: each end reads it back."""
    default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    option = ("--congestion-control", asked) if asked else ()
    server, client = run_pair(bin_dir, pair, "two_copy", "stream", 16384, threads=2, extra=option, server_extra=option)
    assert server["congestion_control"] == client["congestion_control"] == (asked or default)


@needs_root
def test_zero_copy_survives_enobufs(bin_dir):
    """A tiny optmem_max makes sends fail with ENOBUFS: they are retried, the data stays intact."""
    tiny = netns.NamespacePair("cltest_enobufs_s", "cltest_enobufs_c", optmem_max=2048)
    with netns.namespace_pair(tiny):
        server, client = run_pair(bin_dir, tiny, "zero_copy", "stream", 65536, threads=2)
    check_results(server, client, "zero_copy", "stream", 65536, 2)
    assert server["zc_enobufs"] > 0


def test_the_message_file_is_made_once_and_refused_where_it_cannot_be(bin_dir, tmp_path):
    """A file-sending server writes its message file once; a file it cannot create is one line, exit 1."""
    server = [
        str(bin_dir / "sendfile_server"),
        "--bind",
        "127.0.0.1",
        "--port",
        "5997",
        "--size",
        "4096",
        "--timeout",
        "0.2",
    ]
    path = tmp_path / "messages-4096.bin"
    first = _run(bin_dir, "sendfile_server", *server[1:], "--file", str(path))
    assert "waiting for the client timed out" in first.stderr and path.stat().st_size == 65536 * 4096
    made = path.stat().st_mtime_ns
    _run(bin_dir, "sendfile_server", *server[1:], "--file", str(path))
    assert path.stat().st_mtime_ns == made, "an existing file of the right size is reused"
    missing = _run(bin_dir, "sendfile_server", *server[1:], "--file", str(tmp_path / "no" / "such" / "dir" / "m.bin"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "cannot create the message file" in missing.stderr and "No such file or directory" in missing.stderr
    assert not list(tmp_path.glob("*.tmp")), "no half-written file is left"


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_sending_path_runs_here(bin_dir, variant):
    """--probe: this kernel offers what each sending path needs (io_uring operations included)."""
    result = _run(bin_dir, f"{variant}_server", "--probe")
    assert result.returncode == 0 and result.stdout == result.stderr == ""


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
    ("client", (*CLIENT, "--size", "64", "--mode", "bulk"), 2, "--mode: 'bulk' is not stream or rr"),
    ("client", (*CLIENT, "--size", "64", "--congestion-control", "nosuch"), 2, "the kernel offers no such algorithm"),
    ("server", (*SERVER, "--size", "64", "--congestion-control", "nosuch"), 2, "the kernel offers no such algorithm"),
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
    ("client", (*CLIENT, "--size", "64", "--receive", "peek"), 2, "--receive: 'peek' is not copy, truncate or mmap"),
    ("server", (*SERVER, "--size", "64", "--receive", "copy"), 2, "unknown option '--receive'"),
]
FILE_INPUT = [
    ("sendfile", (*SERVER, "--size", "64"), "sendfile sends a message file: --file PATH is required"),
    ("two_copy", (*SERVER, "--size", "64", "--file", "/tmp/x"), "--file: two_copy sends messages from memory"),
]


@pytest.mark.parametrize("role,args,code,message", BAD_INPUT, ids=[" ".join(row[1][4:]) or row[0] for row in BAD_INPUT])
@pytest.mark.parametrize("variant", VARIANTS)
def test_bad_input(bin_dir, variant, role, args, code, message, tmp_path):
    if role == "server" and DRIVERS[variant].from_file:
        args = (*args, "--file", str(tmp_path / "messages.bin"))
    result = _run(bin_dir, f"{variant}_{role}", *args)
    assert result.returncode == code
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("copylab: error: ")
    assert message in result.stderr


@pytest.mark.parametrize("variant,args,message", FILE_INPUT, ids=[row[0] for row in FILE_INPUT])
def test_file_option_matches_the_sending_path(bin_dir, variant, args, message):
    result = _run(bin_dir, f"{variant}_server", *args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr


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
    """ASan+UBSan and TSan builds run every variant in both modes, and every receive mode, without a report."""
    sanitized = build(sanitizer) / "bin"
    for variant in VARIANTS:
        for mode in ("stream", "rr"):
            server, client = run_pair(sanitized, pair, variant, mode, 4099, threads=3)
            check_results(server, client, variant, mode, 4099, 3)
    for receive in RECEIVE_MODES:
        server, client = run_pair(sanitized, pair, "zero_copy", "stream", 16384, threads=3, receive=receive)
        check_results(server, client, "zero_copy", "stream", 16384, 3, receive)
