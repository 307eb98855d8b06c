"""Negative controls of every byte verifier in the C programs: each is fed bytes with known damage and must report
exactly that damage and fail the run.

A verifier that always said "fine" would pass every verified run of the suite; these tests are what tells it from
one that checks.  The peers here are fakes in Python that speak the session protocol (csrc/session.c) and send the
verification pattern (pattern_byte in csrc/pattern.h) with bytes flipped where the test chooses, except the file
senders' case, which runs the real servers on a message file with flipped bytes.  Only the test fixtures and the
compiled programs are used, not the copylab package.  Every case records itself through the ``outcome`` fixture.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import needs_root

CSRC = Path(__file__).resolve().parents[1] / "csrc"
# Every send_VARIANT.c makes a VARIANT_client (csrc/Makefile); they differ only in the file senders' period.
VARIANTS = tuple(sorted(path.stem.removeprefix("send_") for path in CSRC.glob("send_*.c")))
FILE_VARIANTS = ("read_send", "sendfile")
PAGE = os.sysconf("SC_PAGESIZE")
HELLO = struct.Struct("<QQIIIId")  # struct hello: magic, size, threads, mode, verify, reserved, window_s
REQUEST_SIZE = 8
TIMEOUT_S = 20
SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000  # <asm-generic/socket.h>, <linux/socket.h>
TAG = os.getpid() % 100000


def pattern_byte(seq: int, offset: int) -> int:
    """The byte the receiver expects at OFFSET within message number SEQ (pattern_byte in csrc/pattern.h)."""
    return (offset * 131 + (offset >> 8) * 7 + seq * 29 + (seq >> 8)) & 0xFF


def pattern(size: int, messages: int) -> bytearray:
    """Messages 0..MESSAGES-1 of SIZE bytes back to back, as the senders' pattern puts them in the stream."""
    first = bytes(pattern_byte(0, offset) for offset in range(size))
    return bytearray().join(first.translate(_ADD[pattern_byte(seq, 0)]) for seq in range(messages))


# _ADD[k] adds k (mod 256) to every byte: message seq is message 0 plus pattern_byte(seq, 0).
_ADD = [bytes((b + k) & 0xFF for b in range(256)) for k in range(256)]


def flip(data: bytearray, *positions: int) -> bytearray:
    for position in positions:
        data[position] ^= 0xFF
    return data


def expected_failure(differ: int) -> str:
    return f"copylab: error: verification failed: {differ} bytes differ from the pattern\n"


@contextmanager
def fake_server(serve: Callable[[socket.socket], None], mss: int | None = None) -> Iterator[int]:
    """A server on 127.0.0.1 that speaks the session protocol: it reads the client's hello, accepts the connections
    the hello announces, says it is ready and runs SERVE on each connection (a thread each) until the client closes
    the session.  MSS, when given, is the segment size its connections send.  Yields the port."""
    failures: list[BaseException] = []

    def session(listener: socket.socket) -> None:
        control, _ = listener.accept()
        control.settimeout(TIMEOUT_S)
        hello = b""
        while len(hello) < HELLO.size and (more := control.recv(HELLO.size - len(hello))):
            hello += more
        connections = [listener.accept()[0] for _ in range(HELLO.unpack(hello)[2])]
        workers = []
        for connection in connections:
            connection.settimeout(TIMEOUT_S)
            workers.append(threading.Thread(target=quietly, args=(serve, connection), daemon=True))
        control.sendall(b"R")  # every connection is served: the client's warm-up may start
        for worker in workers:
            worker.start()
        try:
            while control.recv(1):
                pass
        except OSError:
            pass  # a client that dies resets its session
        for worker in workers:
            worker.join(TIMEOUT_S)
        for connection in (*connections, control):
            connection.close()

    def quietly(function: Callable[..., None], *args: object) -> None:
        try:
            function(*args)
        except OSError:
            pass  # the client ended its connections (reset, or its process died)
        except BaseException as error:  # surfaced by the test: a broken fake must not pass for a checker's verdict
            failures.append(error)

    with socket.socket() as listener:
        if mss:
            listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)  # the accepted connections inherit it
        listener.settimeout(TIMEOUT_S)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        thread = threading.Thread(target=quietly, args=(session, listener), daemon=True)
        thread.start()
        yield listener.getsockname()[1]
        thread.join(TIMEOUT_S)
    assert not thread.is_alive(), "the fake server did not end with its session"
    assert failures == [], failures


def send_once(payload: bytes, zero_copy: bool = False) -> Callable[[socket.socket], None]:
    """SERVE for fake_server: sends PAYLOAD on the connection, then waits for the client to end it."""

    def serve(connection: socket.socket) -> None:
        if zero_copy:
            connection.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
        connection.sendall(payload, MSG_ZEROCOPY if zero_copy else 0)
        while connection.recv(4096):
            pass

    return serve


def send_forever(payload: bytes, zero_copy: bool = False) -> Callable[[socket.socket], None]:
    """SERVE for fake_server: sends PAYLOAD again and again until the client ends the connection."""

    def serve(connection: socket.socket) -> None:
        if zero_copy:
            connection.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
        while True:
            connection.sendall(payload, MSG_ZEROCOPY if zero_copy else 0)
            # The completions, so that they never fill the socket's option memory (non-blocking: with a timeout,
            # Python would first wait for the socket to be readable, which completions do not make it).
            connection.settimeout(0)
            try:
                while zero_copy and connection.recvmsg(0, 4096, socket.MSG_ERRQUEUE)[1]:
                    pass
            except BlockingIOError:
                pass
            connection.settimeout(TIMEOUT_S)

    return serve


def run_client(program: Path, port: int, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(program), "--connect", "127.0.0.1", "--port", str(port), "--warmup", "0", *options],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def record(outcome: dict, fault: str) -> None:
    outcome.update(area="stress", fault=f"{fault} (negative control of the checker)", rows_lost=None, leftovers=None)


# ---------------------------------------------------------------- the client's receive modes


@pytest.mark.parametrize("variant", VARIANTS)
def test_verification_catches_a_flipped_byte(bin_dir, outcome, variant):
    record(outcome, f"{variant}_client --verify fed one flipped byte per connection")
    payload = flip(pattern(1024, 32), 1024 + 5)
    with fake_server(send_once(payload)) as port:
        client = run_client(
            bin_dir / f"{variant}_client", port, "--size", "1024", "--threads", "2", "--duration", "0.2", "--verify"
        )
    outcome["behaviour"] = f"exit {client.returncode}: {client.stderr.strip()}"
    assert client.returncode == 1 and client.stdout == ""
    assert client.stderr == expected_failure(2)


def test_truncate_verification_catches_flipped_bytes(bin_dir, outcome):
    record(
        outcome, "two_copy_client --receive truncate --verify (MSG_PEEK check) fed three flipped bytes per connection"
    )
    # In the first message, at the end of the second and deep in the stream (beyond one peek of 256 KiB).
    payload = flip(pattern(1024, 512), 5, 2047, 300 * 1024 + 17)
    with fake_server(send_once(payload)) as port:
        client = run_client(
            bin_dir / "two_copy_client",
            port,
            *("--size", "1024", "--threads", "2", "--duration", "0.2", "--receive", "truncate", "--verify"),
        )
    outcome["behaviour"] = f"exit {client.returncode}: {client.stderr.strip()}"
    assert client.returncode == 1 and client.stdout == ""
    assert client.stderr == expected_failure(6)


# How the fake sender makes the mmap receiver take its bytes: as mapped pages, or copied inside the call.
#   mapped: MSG_ZEROCOPY from Python; on local delivery the kernel copies the pages it would have shared into
#           fresh, whole pages (skb_copy_ubufs), and segments of 4 pages (MSS 16384 plus 12 bytes of timestamps)
#           keep every page whole: nearly every byte maps.
#   copied: ordinary sends in segments of 1000 bytes: no page of a segment is whole, nothing can map, and
#           TCP_ZEROCOPY_RECEIVE copies every byte into the client's copy buffer in the same call.
MMAP_PATHS = {"mapped": (16384 + 12, True), "copied": (1000 + 12, False)}
MMAP_SIZE, MMAP_MESSAGES = 65536, 32


@pytest.mark.parametrize("path", MMAP_PATHS)
def test_mmap_verification_catches_flipped_bytes(bin_dir, outcome, path):
    mss, zero_copy = MMAP_PATHS[path]
    record(
        outcome,
        f"two_copy_client --receive mmap --verify fed one flipped byte in every page, its bytes arriving as {path}",
    )
    client_options = ("--size", str(MMAP_SIZE), "--threads", "2", "--receive", "mmap")
    clean = pattern(MMAP_SIZE, MMAP_MESSAGES)
    # The same sender, unverified and streaming: which path its bytes take here.
    with fake_server(send_forever(bytes(clean), zero_copy), mss) as port:
        probe = run_client(bin_dir / "two_copy_client", port, *client_options, "--duration", "0.3")
    assert probe.returncode == 0, probe.stderr
    measured = json.loads(probe.stdout)
    total, mapped = measured["bytes"], measured["rx_mapped_bytes"]
    in_call, read = measured["rx_copybuf_bytes"], measured["rx_copied_bytes"]
    taken = mapped if path == "mapped" else in_call
    share = f"{taken / total:.1%} of {total / 2**20:.0f} MiB {path}"
    if path == "mapped" and mapped == 0:
        outcome["skipped"] = reason = f"TCP_ZEROCOPY_RECEIVE mapped no page here ({share})"
        pytest.skip(reason)
    # With the copy buffer, less than a page queued is copied in the call rather than left to map later: 85% mapped.
    assert mapped + in_call + read == total and taken >= 0.75 * total, share

    pages = len(clean) // PAGE
    damaged = flip(clean, *(page * PAGE + page % PAGE for page in range(pages)))  # one byte in every page
    with fake_server(send_once(bytes(damaged), zero_copy), mss) as port:
        client = run_client(bin_dir / "two_copy_client", port, *client_options, "--duration", "0.2", "--verify")
    outcome["behaviour"] = f"{share} in a clean run; exit {client.returncode}: {client.stderr.strip()}"
    assert client.returncode == 1 and client.stdout == ""
    assert client.stderr == expected_failure(2 * pages)


# ---------------------------------------------------------------- the load client (closed and open loop)

LOAD_SIZE, LOAD_FLIPPED, LOAD_DAMAGED_RESPONSE = 1024, 700, 2  # the third response on a connection is damaged


def answer_requests(size: int, damaged_response: int, flipped: int) -> Callable[[socket.socket], None]:
    """SERVE for fake_server, as a model server answers: every 8-byte request gets the pattern of message 0, but
    response number DAMAGED_RESPONSE on each connection has byte FLIPPED flipped."""
    response = bytes(pattern(size, 1))
    damaged = bytes(flip(pattern(size, 1), flipped))

    def serve(connection: socket.socket) -> None:
        pending, answered = b"", 0
        while chunk := connection.recv(4096):
            pending += chunk
            while len(pending) >= REQUEST_SIZE:
                pending = pending[REQUEST_SIZE:]
                connection.sendall(damaged if answered == damaged_response else response)
                answered += 1

    return serve


@pytest.mark.parametrize("loop", ["closed", "open"])
def test_load_verification_catches_a_flipped_byte(bin_dir, outcome, loop):
    rate = ("--rate", "2000") if loop == "open" else ()
    record(
        outcome,
        f"load_client --verify in the {loop} loop fed a response with one flipped byte "
        f"(byte {LOAD_FLIPPED} of the third response on each connection)",
    )
    with fake_server(answer_requests(LOAD_SIZE, LOAD_DAMAGED_RESPONSE, LOAD_FLIPPED)) as port:
        client = run_client(
            bin_dir / "load_client",
            port,
            *("--size", str(LOAD_SIZE), "--connections", "2", "--threads", "1", "--duration", "0.5", "--verify"),
            *rate,
        )
    outcome["behaviour"] = f"exit {client.returncode}: {client.stderr.strip()}"
    assert client.returncode == 1 and client.stdout == ""
    expected, sent = pattern_byte(0, LOAD_FLIPPED), pattern_byte(0, LOAD_FLIPPED) ^ 0xFF
    # The run ends at the first byte that differs: the message names it, its value and the pattern's.
    assert re.fullmatch(
        rf"copylab: error: response byte {LOAD_FLIPPED} on descriptor \d+ is 0x{sent:02x}, "
        rf"not the pattern's 0x{expected:02x}\n",
        client.stderr,
    ), client.stderr


# ---------------------------------------------------------------- the file senders

FILE_SIZE = 65536
# Message 0, byte 5 and message 2, byte 100 of the file: sent once per pass over the file (256 MiB, 4096 messages).
FILE_FLIPPED = (5, 2 * FILE_SIZE + 100)
NAMESPACE = f"clverify{TAG}"
# The link the file senders' case runs over: slow enough that no connection gets through its 256 MiB file once
# in the run (a second pass would meet the flipped bytes again), fast enough to bring the first messages at once.
SLOW_LINK = ("tbf", "rate", "200mbit", "burst", "256kb", "latency", "100ms")


@pytest.fixture(scope="module")
def damaged_file(tmp_path_factory) -> Iterator[Path]:
    """The message file of FILE_SIZE-byte messages (message_file_messages in csrc/message_file.c: 256 MiB, at least
    8 messages) with FILE_FLIPPED flipped; a server uses a file of the right length as it is."""
    messages = max(-(-(256 << 20) // FILE_SIZE), 8)
    path = tmp_path_factory.mktemp("verifiers") / f"messages-{FILE_SIZE}.bin"
    first = bytes(pattern(FILE_SIZE, 1))
    with open(path, "wb") as file:
        for seq in range(messages):
            message = bytearray(first.translate(_ADD[pattern_byte(seq, 0)]))
            for position in FILE_FLIPPED:
                if position // FILE_SIZE == seq:
                    flip(message, position % FILE_SIZE)
            file.write(message)
    yield path
    path.unlink()


@contextmanager
def slow_namespace() -> Iterator[list[str]]:
    """A network namespace of this test's own whose loopback is SLOW_LINK; yields the prefix that runs a command in
    it.  Removed afterwards, with whatever still runs in it."""
    subprocess.run(["ip", "netns", "add", NAMESPACE], check=True, capture_output=True, timeout=TIMEOUT_S)
    try:
        for command in (
            ["ip", "-n", NAMESPACE, "link", "set", "lo", "up"],
            ["tc", "-n", NAMESPACE, "qdisc", "add", "dev", "lo", "root", *SLOW_LINK],
        ):
            subprocess.run(command, check=True, capture_output=True, timeout=TIMEOUT_S)
        yield ["ip", "netns", "exec", NAMESPACE]
    finally:
        for pid in subprocess.run(
            ["ip", "netns", "pids", NAMESPACE], capture_output=True, text=True, timeout=TIMEOUT_S
        ).stdout.split():
            os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "del", NAMESPACE], check=True, capture_output=True, timeout=TIMEOUT_S)


@needs_root
@pytest.mark.parametrize("variant", FILE_VARIANTS)
def test_file_sender_verification_catches_flipped_bytes_in_the_file(bin_dir, outcome, damaged_file, variant):
    record(
        outcome,
        f"{variant}_server sending a message file with {len(FILE_FLIPPED)} flipped bytes to "
        f"{variant}_client --verify, 2 connections",
    )
    with slow_namespace() as inside:
        server = subprocess.Popen(
            [
                *inside,
                str(bin_dir / f"{variant}_server"),
                *("--bind", "127.0.0.1", "--port", "5499", "--size", str(FILE_SIZE), "--file", str(damaged_file)),
                *("--timeout", str(TIMEOUT_S)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            started = time.monotonic()
            client = subprocess.run(
                [
                    *inside,
                    str(bin_dir / f"{variant}_client"),
                    *("--connect", "127.0.0.1", "--port", "5499", "--size", str(FILE_SIZE), "--threads", "2"),
                    *("--warmup", "0", "--duration", "0.2", "--verify"),
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
            elapsed = time.monotonic() - started
            server.communicate(timeout=TIMEOUT_S)
        finally:
            server.kill()
            server.wait()
    outcome["behaviour"] = f"exit {client.returncode} after {elapsed:.1f} s: {client.stderr.strip()}"
    # At 200 Mbit/s, 10 s carry 250 MB: no connection reached the end of its file and met the flips again.
    assert elapsed < 10
    assert client.returncode == 1 and client.stdout == ""
    assert client.stderr == expected_failure(2 * len(FILE_FLIPPED))
