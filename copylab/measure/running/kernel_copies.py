"""The bytes the kernel copies in each trial's measured window, counted with BPF (bpftrace).

One bpftrace runs on the client's end for the whole sweep (starting it takes about half a second, too long
to pay per trial). Per process and millisecond it counts two things the kernel reports for receivers in the
client's network namespace: the bytes copied to user space (tracepoint skb:skb_copy_datagram_iovec) and the
bytes the process's receive calls took from its sockets, copied or not (sock:sock_recv_length, peeks left
out). It flushes the counts every few milliseconds into a file; a trial's row gets the sums over the
milliseconds of its window, for the trial's client process only (the client prints its pid and its window's
CLOCK_MONOTONIC ends, the clock of BPF's nsecs). The two millisecond buckets at the window's ends are counted
whole: at most 2 ms of traffic more than the window.

A window is written only when its counts are complete. The received bytes are the check: the kernel must
have counted what the client says it received in the window (the bytes that were not mapped), within
COMPLETE; otherwise, as when bpftrace flushed too late to be sure nothing was cleared uncounted, stopped
flushing or died, both columns stay empty with the reason. So a 0 copied is a measured 0: the bytes arrived
(`rcv_kernel_received_bytes`) and none was copied, as with MSG_TRUNC.

bpftrace holds a lease it must see renewed: the controller renews it before every trial, and a bpftrace whose
lease is older than a trial's bound ends itself, so a lost controller never leaves it attached on a host.

The send side's copies are only visible to function probes (kprobe/fentry); where the kernel refuses them,
those columns are empty with the reason.  What the sender's kernel makes of its messages is visible to a
tracepoint: where the server runs on the same kernel (two namespaces of one machine), every skb its network
namespace's devices transmit in the window is counted with its TCP segments (gso_segs) and page fragments
(tracepoint net:net_dev_start_xmit; pure ACKs left out): how a message's layout reaches the wire.  Those are
counted by millisecond alone, not by process: a transmit may run in any process's context (an ACK that
arrives while the receiver runs sends the sender's next segments), and the sweep runs one trial at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from copylab.measure.running.window import Window
from copylab.testbeds.testbed import End, Started

FLUSH_MS = 20
# How long a trial waits for the flush that covers its window's end.
FLUSH_WAIT_S = 1.0
ATTACH_WAIT_S = 20.0
# A lease outlives a trial's bound by this much.
LEASE_MARGIN_S = 10.0
# The kernel's count of received bytes against the client's: within this, the window was counted whole.
COMPLETE = (0.9, 1.1)
COPIED_COLUMN = "rcv_kernel_copy_bytes"
RECEIVED_COLUMN = "rcv_kernel_received_bytes"
RECEIVE_COLUMNS = (COPIED_COLUMN, RECEIVED_COLUMN)
SEND_COLUMNS = ("snd_kernel_copy_bytes", "zc_deferred_copy_bytes")
# The sender's transmitted skbs: map kind -> column.
SKB_COLUMNS = {"skbs": "snd_skbs", "segments": "snd_skb_segments", "frags": "snd_skb_frags"}
COUNTED = {"copied": COPIED_COLUMN, "received": RECEIVED_COLUMN, **SKB_COLUMNS}
COLUMNS = (*RECEIVE_COLUMNS, *SEND_COLUMNS, *SKB_COLUMNS.values())
MSG_PEEK = 2
# An IPv4 TCP segment without payload (Ethernet, IP and TCP headers with the timestamp option) is this long: a
# transmitted skb longer than this carries data.
PURE_ACK_BYTES = 66

# Two sets of maps take turns: the tracepoints add to the set of the current turn while bpftrace's user space
# prints and clears the other (print and clear run there later, so clearing a map still being added to would
# lose counts; a print that comes a whole turn late shows as keys newer than its flush, and is detected).
_PROGRAM = """
tracepoint:skb:skb_copy_datagram_iovec /curtask->nsproxy->net_ns->ns.inum == {namespace}/ {{
    if (@turn % 2 == 0) {{ @copied_even[pid, nsecs / 1000000] = sum(args->len); }}
    else {{ @copied_odd[pid, nsecs / 1000000] = sum(args->len); }}
}}
tracepoint:sock:sock_recv_length
/curtask->nsproxy->net_ns->ns.inum == {namespace} && args->ret > 0 && (args->flags & {peek}) == 0/ {{
    if (@turn % 2 == 0) {{ @received_even[pid, nsecs / 1000000] = sum(args->ret); }}
    else {{ @received_odd[pid, nsecs / 1000000] = sum(args->ret); }}
}}
{transmits}interval:ms:{flush} {{
    $until = nsecs;
    @turn = @turn + 1;
    if (@turn % 2 == 1) {{
        {print_even}
    }} else {{
        {print_odd}
    }}
    printf("flushed %llu\\n", $until);
}}
"""
_TRANSMITS = """
tracepoint:net:net_dev_start_xmit
/((struct sk_buff *)args->skbaddr)->dev->nd_net.net->ns.inum == {sender} && args->len > {ack}/ {{
    $skb = (struct sk_buff *)args->skbaddr;
    $frags = ((struct skb_shared_info *)($skb->head + $skb->end))->nr_frags;
    $segments = args->gso_segs > 0 ? args->gso_segs : 1;
    if (@turn % 2 == 0) {{
        @skbs_even[0, nsecs / 1000000] = count(); @segments_even[0, nsecs / 1000000] = sum($segments);
        @frags_even[0, nsecs / 1000000] = sum($frags);
    }} else {{
        @skbs_odd[0, nsecs / 1000000] = count(); @segments_odd[0, nsecs / 1000000] = sum($segments);
        @frags_odd[0, nsecs / 1000000] = sum($frags);
    }}
}}
"""


def program(namespace: str, sender: str | None) -> str:
    """The bpftrace program: receives in the client's network NAMESPACE, and the transmits of the SENDER's
    network namespace where it shares this kernel (None: not counted)."""
    kinds = ["copied", "received", *(SKB_COLUMNS if sender else ())]
    prints = {
        turn: " ".join(f"print(@{kind}_{turn}); clear(@{kind}_{turn});" for kind in kinds) for turn in ("even", "odd")
    }
    transmits = _TRANSMITS.format(sender=sender, ack=PURE_ACK_BYTES) if sender else ""
    return _PROGRAM.format(
        namespace=namespace,
        flush=FLUSH_MS,
        peek=MSG_PEEK,
        transmits=transmits,
        print_even=prints["even"],
        print_odd=prints["odd"],
    )


# bpftrace reads tracepoints through tracefs; a private mount namespace mounts it where it is not mounted.
_WITH_TRACEFS = 'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; exec "$@"'
# Runs "$@" and kills it once the lease file ($1) is older than $2 seconds, checking every second.
_LEASED = (
    'lease=$1 bound=$2; shift 2; "$@" & child=$!; '
    "while kill -0 $child 2>/dev/null; do "
    'age=$(( $(date +%s) - $(stat -c %Y "$lease" 2>/dev/null || echo 0) )); '
    '[ "$age" -gt "$bound" ] && { kill -KILL $child; break; }; sleep 1; done; wait $child'
)


def _last_line(text: str, fallback: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("WARNING")]
    return lines[-1] if lines else fallback


class Accounting:
    """Kernel copy counts for the trials of one sweep, or the reason there are none."""

    def __init__(
        self, end: End, unavailable: str = "not started", lease_s: float = 60.0, sender: End | None = None
    ) -> None:
        self.end = end
        self.sender = sender  # the server's end, where it shares END's kernel
        self._unavailable = unavailable
        self.output = ""
        self.lease = ""
        self.lease_s = lease_s
        self.process: Started | None = None
        self.receive_reason: str | None = unavailable
        self.send_reason = unavailable if unavailable != "not started" else "needs kprobe or fentry probes"
        self._offset = 0
        self._buckets: dict[str, dict[tuple[int, int], int]] = {kind: {} for kind in COUNTED}
        self._pending: dict[str, dict[tuple[int, int], int]] = {kind: {} for kind in COUNTED}
        self._flushed_ns = 0
        self._late: list[tuple[int, int]] = []  # ms ranges whose counts a late print may have cleared
        self._renewed = -float("inf")

    def start(self, directory: str) -> None:
        try:
            version = self.end.run(["bpftrace", "--version"])
        except FileNotFoundError:
            version = None
        if version is None or version.returncode != 0:
            self.receive_reason = self.send_reason = f"bpftrace is not installed on the {self.end.label}"
            return
        inode = ["stat", "-L", "-c", "%i", "/proc/self/ns/net"]
        namespace = self.end.run(inode).stdout.strip()
        sender = self.sender.run(inode).stdout.strip() if self.sender is not None else None
        self.output = f"{directory}/kernel-copies.json"
        self.lease = f"{directory}/lease"
        self.renew()
        bpftrace = ["bpftrace", "-f", "json", "-o", self.output, "-e", program(namespace, sender)]
        leased = ["sh", "-c", _LEASED, "sh", self.lease, str(round(self.lease_s)), *bpftrace]
        # The lease bounds it; the deadline is only the end's own backstop.
        self.process = self.end.start(["unshare", "-m", "sh", "-c", _WITH_TRACEFS, "sh", *leased], 7 * 24 * 3600)
        ends = time.monotonic() + ATTACH_WAIT_S
        while '"attached_probes"' not in self.end.read(self.output):
            if self.process.returncode is not None or time.monotonic() > ends:
                self.process.kill()
                stdout, stderr = self._ended()
                self.receive_reason = f"bpftrace could not attach: {_last_line(stderr + stdout, 'no reason given')}"
                self.process = None
                return
            time.sleep(0.02)
        self.receive_reason = None
        self.renew(force=True)  # attaching took a while: the lease counts from here
        probe = self.end.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                _WITH_TRACEFS,
                "sh",
                "bpftrace",
                "-e",
                "kprobe:skb_copy_ubufs { exit(); } BEGIN { exit(); }",
            ],
        )
        self.send_reason = (
            f"needs kprobe or fentry, which this kernel refuses ({_last_line(probe.stderr, 'no reason given')})"
            if probe.returncode != 0 or "ERROR" in probe.stderr
            else "send-side accounting (kprobes) is not implemented yet"
        )

    @property
    def skb_reason(self) -> str | None:
        """Why the sender's transmits are not counted: the receives' reason where the sender shares the traced
        kernel (the same bpftrace counts both), else why there is no bpftrace, or that its kernel is another."""
        if self.sender is not None:
            return self.receive_reason
        if self._unavailable != "not started":
            return self._unavailable
        return "the sender runs on another host, whose kernel is not traced"

    def renew(self, force: bool = False) -> None:
        """Renews bpftrace's lease: called before every trial, so that it outlives no controller (a renewal
        less than a quarter of the lease old stands unless FORCE)."""
        if self.lease and (force or time.monotonic() - self._renewed > self.lease_s / 4):
            self.end.run(["touch", self.lease])
            self._renewed = time.monotonic()

    def _ended(self) -> tuple[str, str]:
        assert self.process is not None
        try:
            return self.process.wait(5)
        except Exception:  # the reason is best effort; the caller says it could not attach either way
            return "", ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def _read(self) -> None:
        text = self.end.read(self.output, self._offset)
        complete = text[: text.rfind("\n") + 1]
        for line in complete.splitlines():
            try:
                entry: dict[str, Any] = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("type") == "map":
                for name, counts in entry["data"].items():
                    kind = name.removeprefix("@").rsplit("_", 1)[0]
                    for key, count in counts.items():
                        pid, ms = (int(part) for part in key.split(","))
                        pending = self._pending[kind]
                        pending[pid, ms] = pending.get((pid, ms), 0) + int(count)
            elif entry.get("type") == "printf" and str(entry.get("data", "")).startswith("flushed "):
                self._flush(int(entry["data"].split()[1]))
        self._offset += len(complete.encode())

    def _flush(self, until_ns: int) -> None:
        """The maps printed before a flush line are the turn that flush retired: keys a whole turn newer than
        it were added after the map went live again, so its clear may have dropped counts around them."""
        until_ms = until_ns // 1_000_000
        newest = max((ms for pending in self._pending.values() for _, ms in pending), default=0)
        if newest > until_ms + FLUSH_MS:
            self._late.append((until_ms + FLUSH_MS, newest + FLUSH_MS))
        for kind, pending in self._pending.items():
            buckets = self._buckets[kind]
            for key, count in pending.items():
                buckets[key] = buckets.get(key, 0) + count
            pending.clear()
        self._flushed_ns = until_ns

    def _alive(self) -> str | None:
        """Why counting stopped, or None while bpftrace runs."""
        if self.receive_reason is not None:
            return self.receive_reason
        if self.process is None or self.process.returncode is not None:
            return "bpftrace ended during the sweep"
        return None

    def columns(self, window: Window | None) -> tuple[dict[str, float | int], str]:
        """The trial's kernel copy and transmit columns for its client's WINDOW, and why any is empty."""
        values: dict[str, float | int] = {column: float("nan") for column in COLUMNS}
        reasons: dict[str, str | None] = {column: self.send_reason for column in SEND_COLUMNS}
        reasons |= {column: self.skb_reason for column in SKB_COLUMNS.values()}
        why = self._alive() or (None if window else "the implementation does not report its measured window")
        if why is None and window is not None:
            why = self._count(window, values)
        if why is not None:
            # The transmits are flushed with the receives: a window whose receives are in doubt is in doubt whole.
            failed = [*RECEIVE_COLUMNS, *(column for column in SKB_COLUMNS.values() if not reasons[column])]
            reasons.update({column: why for column in failed})
            values.update({column: float("nan") for column in failed})
        missing = "; ".join(f"{column}: {reason}" for column, reason in reasons.items() if reason)
        return values, missing

    def _count(self, window: Window, values: dict[str, float | int]) -> str | None:
        """Fills the receive columns for WINDOW, and the transmit columns where they are counted; returns why they
        cannot be trusted, or None."""
        waits_until = time.monotonic() + FLUSH_WAIT_S
        self._read()
        while self._flushed_ns <= window.end_ns and time.monotonic() < waits_until:
            time.sleep(FLUSH_MS / 1000)
            self._read()
        if self._flushed_ns <= window.end_ns:
            self.receive_reason = "bpftrace stopped flushing its counts"
            return f"bpftrace did not flush its counts within {FLUSH_WAIT_S:g} s of the window's end"
        first, last = window.begin_ns // 1_000_000, window.end_ns // 1_000_000
        transmits = self.skb_reason is None
        for kind, column in COUNTED.items():
            if kind in SKB_COLUMNS and not transmits:
                continue
            buckets = self._buckets[kind]
            # Transmits are counted for the whole namespace (pid 0), receives for the client process.
            pid = 0 if kind in SKB_COLUMNS else window.pid
            values[column] = sum(n for (who, ms), n in buckets.items() if who == pid and first <= ms <= last)
            self._buckets[kind] = {key: n for key, n in buckets.items() if key[1] > last}
        late = [(low, high) for low, high in self._late if low <= last and high >= first]
        self._late = [(low, high) for low, high in self._late if high > last]
        if late:
            low, high = late[0]
            return f"bpftrace printed its counts late (milliseconds {low}-{high} may have been cleared uncounted)"
        received, expected = values[RECEIVED_COLUMN], window.expected_bytes
        if expected > 0 and not COMPLETE[0] <= received / expected <= COMPLETE[1]:
            return (
                f"incomplete: the kernel counted {received:,} bytes received where the client received "
                f"{expected:,} in the window"
            )
        return None


@contextmanager
def accounting(end: End, sweep: str, lease_s: float, sender: End | None = None) -> Iterator[Accounting]:
    """Kernel copy accounting on END for a sweep, stopped after the block; LEASE_S: how long bpftrace outlives
    the last renewal of its lease; SENDER: the server's end when it shares END's kernel (its transmits are
    counted too)."""
    counts = Accounting(end, lease_s=lease_s, sender=sender)
    with ExitStack() as stack:
        directory = stack.enter_context(end.scratch(f"copylab-kcopy-{sweep}-"))
        stack.callback(counts.stop)
        counts.start(directory)
        yield counts
