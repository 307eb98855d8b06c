"""Every line a user can meet when copylab refuses or cannot do something, declared once: the message, its cause
and what to do.  docs/troubleshooting.md is generated from this catalogue (`python -m copylab.cli.troubleshooting`);
a test holds the page to it, and finds a catalogued message written out anywhere but here.

An error is raised from here: `raise NOT_BUILT.error(path=..., command=...)`, and the command line prints it as
`copylab: error: MESSAGE`.  A note is a line a task prints and goes on (or stops with another status): its
message is the whole line, as printed, and it is declared here so that the page can explain it.  A message is a
str.format template; SAMPLE fills it in for the page, where a number the code computes is filled in by the page's
generator from the code itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from copylab.errors import CopylabError


@dataclass(frozen=True)
class Entry:
    message: str  # a str.format template
    cause: str
    do: str
    section: str  # the heading the page lists it under
    kind: Literal["error", "note"] = "error"
    sample: Mapping[str, Any] = field(default_factory=dict)  # what the page fills MESSAGE in with

    def text(self, **values: Any) -> str:
        return self.message.format(**values)

    def error(self, **values: Any) -> CopylabError:
        """The exception to raise: its one line is MESSAGE filled in with VALUES."""
        return CopylabError(self.text(**values))


SETUP, FILES, NAMESPACES, PAGES, TRANSPORT, SERVERS, URING, COUNTERS, TRIALS, COMPARE, EXPLORER = (
    "Before anything runs",
    "Files and folders",
    "Network namespaces",
    "The sender's pages (`--sender-pages small`, profile `mmap-small`)",
    "The transport",
    "The servers experiment",
    "io_uring",
    "Counters: perf and bpftrace",
    "When trials fail",
    "Comparing two sweeps",
    "The explorer on another machine",
)
SECTIONS = (SETUP, FILES, NAMESPACES, PAGES, TRANSPORT, SERVERS, URING, COUNTERS, TRIALS, COMPARE, EXPLORER)

_ENABLE_USERNS = (
    "enable them (sysctl -w user.max_user_namespaces=15000; where AppArmor restricts them, also sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0) or run as root"
)
_CHOWN = "sudo chown -R $USER .venv build data figures report"

MISSING_PACKAGES = Entry(
    "missing Debian packages: {packages}; run ./inv as root once, or: sudo apt-get install {packages}",
    "`./inv` checks the Debian packages copylab needs before every task and refuses every task until all are "
    "installed; without root it cannot install them.",
    "Install them with the `sudo apt-get install` command the line gives (the whole list is in "
    "[testbeds.md](testbeds.md#debian-packages)), then run `./inv` as yourself. `sudo ./inv` would install them "
    "too, but leave `.venv` owned by root. copylab needs Debian's `apt`.",
    SETUP,
    sample={"packages": "bpftrace iperf3"},
)
C_BUILD_FAILED = Entry(
    "the C build failed: {reason}",
    "`gcc` or `make` stopped: the reason is the last line they printed. A missing compiler or header (`gcc`, "
    "`liburing-dev`) is the usual cause on a new machine; `Permission denied`, a `build/` left owned by root by a "
    f"`sudo ./inv` (then: `{_CHOWN}`).",
    "Run `make -C csrc` to see the whole output; `sudo apt-get install gcc make libc6-dev liburing-dev` installs "
    "what the build needs.",
    SETUP,
    sample={"reason": "csrc/send_uring_send.c:12:10: fatal error: liburing.h: No such file or directory"},
)
NOT_BUILT = Entry(
    "{path} is not built: run `{command}` first",
    "Every task that runs the C programs builds them first, so this line comes only when they went missing since "
    "(`./inv clean`, or `build/` removed while a task ran) or when copylab's Python functions are called directly.",
    "Run the command the line names.",
    SETUP,
    sample={"path": "build/bin/two_copy_server", "command": "./inv build"},
)
SANITIZER_UNKNOWN = Entry(
    "--sanitize must be one of {choices}, not {asked!r}",
    "`--sanitize` builds instrumented copies of the programs, with one of gcc's sanitizers.",
    "Name one of those listed.",
    SETUP,
    sample={"choices": "address, undefined, thread", "asked": "memory"},
)
NOT_WRITABLE = Entry(
    "{path} is not writable by this user: choose a data directory it can write",
    "The folder belongs to another user, most often root after a `sudo ./inv report` or `sudo ./inv test`: "
    "`.venv`, `build/`, `data/`, `figures/` and `report/` are then root's, and later runs as yourself fail.",
    f"Give them back to yourself: `{_CHOWN}`. copylab needs root for nothing `./inv report` does.",
    FILES,
    sample={"path": "data"},
)
ALREADY_HOLDS = Entry(
    "{directory} already holds a sweep: pass --resume to finish it, or choose another --name",
    "`./inv run-sweep --name NAME` writes `data/NAME/`, and a sweep is never overwritten.",
    "Add `--resume` to run exactly the trials of that sweep not yet ok, or give another `--name`.",
    FILES,
    sample={"directory": "data/sweep"},
)
NOT_A_SWEEP = Entry(
    "{directory}: not a sweep directory (no {missing})",
    "A task that reads sweeps (`report --data`, `compare`, `analyze`, `explore`) was given a folder that holds no "
    "sweep: a sweep's folder holds its `trials.csv` and `manifest.json`.",
    "Name a folder that `./inv run-sweep` or `./inv report` wrote, `data/NAME` (`ls data/` lists them), or a "
    "committed reference, `data/reference`.",
    FILES,
    sample={"directory": "data/quick", "missing": "trials.csv"},
)
NO_REPORT = Entry(
    "no report to hand in ({missing} missing in {directory}): run ./inv report first",
    "`./inv handin` packs the report that `./inv report` wrote, with the sweeps it was rendered from.",
    "Run `./inv report` (or render one from existing sweeps with `./inv report --data ...`), then `./inv handin`.",
    FILES,
    sample={"missing": "report.pdf, report.html, report.ipynb", "directory": "report"},
)
REPORT_SWEEP_GONE = Entry(
    "the report was rendered from {directory}, which no longer holds a sweep",
    "`./inv handin` packs the sweeps the report was rendered from, as its executed notebook "
    "(`report/report.ipynb`) names them, and one of them was moved or removed since.",
    "Put the sweep back, or render the report again from the sweeps you have (`./inv report --data ...`).",
    FILES,
    sample={"directory": "data/quick-20261128T034429"},
)
REPORT_SWEEPS_UNKNOWN = Entry(
    "{notebook}: cannot tell which sweeps the report used ({reason})",
    "The executed report notebook lacks the parameters papermill records in it: it was edited, or written by "
    "something other than `./inv report`.",
    "Render the report again (`./inv report`, or `./inv report --data ...`), then `./inv handin`.",
    FILES,
    sample={"notebook": "report/report.ipynb", "reason": "'papermill'"},
)
NEEDS_ROOT = Entry(
    "{what} needs root (network namespaces); run it as root or with sudo",
    "`netns-up` and `netns-down` make and remove namespaces in the host's own network namespace, and `./inv "
    "bench` needs root too. Sweeps and `./inv report` do not.",
    "Run them as root, or leave them: a sweep without root leaves nothing on the host to clean.",
    NAMESPACES,
    sample={"what": "netns-down"},
)
NAMESPACE_IN_USE = Entry(
    "namespace {name} is in use by copylab process {pid}; choose other names (or ./inv netns-down if that process "
    "is not copylab's)",
    "Another sweep (or a test run) of this machine is using the namespaces this one would create; removing them "
    "would break it.",
    "Wait for it to end, or give this sweep other names (`--namespaces srv2,cli2`). If process PID is no copylab "
    "(a reused process number after a crash), `sudo ./inv netns-down` removes the leftovers.",
    NAMESPACES,
    sample={"name": "copylab_srv", "pid": 4242},
)
NAMESPACE_NOT_OURS = Entry(
    "namespace {name} exists and was not created by copylab; choose other names",
    "A network namespace of that name exists, made by something else; copylab never touches namespaces it did not "
    "create.",
    "Give the sweep other names (`--namespaces srv2,cli2`).",
    NAMESPACES,
    sample={"name": "copylab_srv"},
)
USERNS_DISABLED = Entry(
    "user namespaces are disabled here (user.max_user_namespaces = 0): " + _ENABLE_USERNS,
    "Without root, copylab makes its network namespaces inside a user namespace of its own, and the kernel has "
    "them switched off.",
    "What the line says, as root once, or run copylab as root.",
    NAMESPACES,
)
USERNS_REFUSED = Entry(
    "cannot create a user namespace ({reason}): " + _ENABLE_USERNS,
    "AppArmor (Ubuntu 23.10 and later) keeps unprivileged users from creating user namespaces; in a container, the "
    "container's seccomp profile may forbid `unshare`.",
    "What the line says, as root once, or run copylab as root.",
    NAMESPACES,
    sample={"reason": "unshare: unshare failed: Operation not permitted"},
)
PAGES_SKIPPED = Entry(
    "copylab: the {profile} sweep is not measured: {why}",
    "Small pages are a setting of the whole host (`net.core.high_order_alloc_disable`), not of a namespace: only "
    "root may change it. Without root, `./inv report` skips the `mmap-small` sweep with this line, and the report "
    "says so.",
    "Nothing, for a report without small pages; otherwise run as root.",
    PAGES,
    kind="note",
    sample={
        "profile": "mmap-small",
        "why": "sender-pages: small needs root (net.core.high_order_alloc_disable is a setting of the whole host, "
        "which holds large pages now)",
    },
)
PAGES_NEED_ROOT = Entry(
    "sender-pages: {pages} needs root ({sysctl} is a setting of the whole host, which holds {host} pages now)",
    "As above, for `./inv run-sweep --sender-pages small` (or `--profile mmap-small`) without root.",
    "Run it as root.",
    PAGES,
    sample={"pages": "small", "sysctl": "net.core.high_order_alloc_disable", "host": "large"},
)
PAGES_HELD = Entry(
    "--sender-pages {pages}: another sweep of this machine holds {sysctl}, a setting of the whole host, at another "
    "value; run the sweeps one after the other",
    "While one sweep holds the host's pages at one value, no other sweep may run with the other.",
    "Run the sweeps one after the other.",
    PAGES,
    sample={"pages": "small", "sysctl": "net.core.high_order_alloc_disable"},
)
CONGESTION_UNOFFERED = Entry(
    "--congestion-control {name}: the {where} offers {offered}",
    "The kernel does not offer the congestion control asked for (it may be a module not loaded).",
    "Load it (`modprobe tcp_bbr`, as root) or choose one of those named; copylab's default, `cubic`, is built into "
    "every Debian kernel.",
    TRANSPORT,
    sample={"name": "bbr", "where": "kernel of this machine", "offered": "reno, cubic"},
)
SOCKET_BUFFER_CAPPED = Entry(
    "--socket-buffer {asked}: the {where} caps a {buffer} buffer at {cap} bytes without CAP_NET_ADMIN ({sysctl}): "
    "ask for at most that, raise it, or run as root",
    "A process without `CAP_NET_ADMIN` cannot force a buffer above `net.core.wmem_max` (the send buffer, checked "
    "first) or `net.core.rmem_max` (the receive buffer). Without `--socket-buffer` a sweep takes the cap and says "
    "so; the line comes only when you ask for more.",
    "Ask for at most the cap, raise it (`sysctl -w net.core.rmem_max=2097152 net.core.wmem_max=2097152`, as root), "
    "or run as root.",
    TRANSPORT,
    sample={"asked": 1048576, "where": "kernel of this machine", "buffer": "send", "cap": 212992},
)
SELECT_LIMIT = Entry(
    "{label}: a {name} server holds at most {limit} connections (FD_SETSIZE less its own descriptors), not {total}; "
    "drop {name} or the larger counts",
    "`select()` watches at most `FD_SETSIZE` ({fd_setsize}) descriptors, some of which the server uses itself; "
    "busy and idle connections both count.",
    "Drop `select` (`--models thread,poll,epoll,...`) or keep `--connections` plus `--idle-connections` at or below "
    "{limit}.",
    SERVERS,
    sample={"label": "connections", "total": 2000},
)
TOO_FEW_DESCRIPTORS = Entry(
    "connections: {most} connections need {needed} descriptors per process and the hard limit is {hard} (raise it "
    "with ulimit -Hn or in /etc/security/limits.conf)",
    "Without root a process cannot open more descriptors than its hard limit; each end needs one per connection "
    "and {besides} more of its own.",
    "Raise the hard limit as the line says, or run as root.",
    SERVERS,
    sample={"most": 2000, "hard": 1024},
)
URING_UNAVAILABLE = Entry(
    "copylab: {name} is unavailable here: {why}; its trials are not run",
    "The kernel has io_uring switched off (`kernel.io_uring_disabled` 1 or 2, or a container's seccomp profile), "
    "or it lacks an operation a sender or server needs. The sweep goes on without those implementations, and the "
    "report leaves them out.",
    "As root, `sysctl -w kernel.io_uring_disabled=0`, or accept a report without the io_uring senders and the "
    "`uring` server.",
    URING,
    kind="note",
    # its name is an io_uring sender's, which the page's generator takes from the registry
    sample={"why": "io_uring_setup: Operation not permitted (kernel.io_uring_disabled?)"},
)
NOTHING_RUNS = Entry(
    "no implementation of the sweep can run here (see the lines above)",
    "Every implementation the sweep asks for is unavailable on this machine, each said in a line like the one above.",
    "Do what those lines say, or ask for implementations that run here.",
    URING,
)
NO_HARDWARE_COUNTERS = Entry(
    "the hardware counters are not supported (perf reports <not supported> for {events})",
    "Most virtual machines and containers give a guest no hardware counters: perf answers `<not supported>`, and "
    "copylab leaves those cells empty (never 0) with this reason in `perf_missing`; the report says so in "
    "*Limitations* and answers question 2 from the copy-cost calibration instead.",
    "Nothing, to use the rest of the report; for cache misses, run on bare metal or a VM with a virtual PMU.",
    COUNTERS,
    kind="note",
    sample={"events": "cycles, instructions, cache-misses"},
)
USER_MODE_ONLY = Entry(
    "perf could count user mode only (perf_event_paranoid 2 without root): the kernel's part is missing",
    "Without root and with `kernel.perf_event_paranoid` at 2, perf counts user mode only (the reason in "
    "`perf_missing`).",
    "Run as root, or `sysctl -w kernel.perf_event_paranoid=1`.",
    COUNTERS,
    kind="note",
)
KERNEL_COPIES_UNCOUNTED = Entry(
    "copylab: kernel copies are not counted: {reason}",
    "The kernel's copy counts come from bpftrace, run as root; it is missing, or could not attach to the kernel's "
    "tracepoints (then the line gives bpftrace's own reason). Without root there are no counts and no line. The "
    "columns stay empty, with the reason in `kernel_copy_missing`.",
    "Install bpftrace (`sudo apt-get install bpftrace`), or run with `--no-kernel-copies`.",
    COUNTERS,
    kind="note",
    sample={"reason": "bpftrace is not installed on the client namespace copylab_cli"},
)
TRIALS_NOT_SAMPLED = Entry(
    "copylab: the trials are not sampled: {reason}",
    "The CPU breakdown (`profile.csv`) samples the kernel's functions with `perf record`, which needs root, both "
    "ends on this machine, and a perf that can sample the kernel (the line gives perf's own reason otherwise). The "
    "sweep runs unsampled, `profile.csv` holds this line, and the report says the breakdown is missing.",
    "Run as root for the breakdown; everything else is measured without it.",
    COUNTERS,
    kind="note",
    sample={
        "reason": "sampling the kernel's functions with perf record needs root (this sweep runs without it)",
    },
)
TRIALS_FAILED = Entry(
    "copylab: {failed} of {ran} trials failed (see the error column)",
    "A trial that crashed, exited non-zero or ran past its time is recorded as failed and the sweep goes on; the "
    "task exits 1 at the end.",
    "Read the `error` column of `trials.csv`; `./inv run-sweep --name NAME --resume` runs exactly the trials not "
    "yet ok.",
    TRIALS,
    kind="note",
    sample={"failed": 3, "ran": 120},
)
INTERRUPTED = Entry(
    "copylab: interrupted; everything measured so far is saved",
    "Ctrl-C or SIGTERM stops a task after its clean-up (exit status 130).",
    "`./inv run-sweep --name NAME --resume` finishes an interrupted sweep.",
    TRIALS,
    kind="note",
)
SWEEPS_DIFFER = Entry(
    "{a} and {b} were measured {how}: {details}; compare sweeps of one profile, or pass --shared-only to compare "
    "what they share",
    "`./inv compare` reads both manifests: sweeps of different grids (sizes, threads, implementations, ...) hold "
    "different configurations, and sweeps of different methods (warm-up, window, congestion control, buffers, ...) "
    "measure the same configuration differently.",
    "Compare a sweep with one of the same profile measured by the same copylab (docs/sweeps.md gives the command "
    "that measured each reference), or pass `--shared-only`: the configurations both hold are compared, and a line "
    "says what was left out and which method differs.",
    COMPARE,
    sample={
        "a": "data/reference",
        "b": "data/quick-20261128T101500",
        "how": "on different grids",
        "details": "sizes 1KiB,4KiB,16KiB,64KiB,256KiB against 1KiB,2KiB,4KiB,8KiB,16KiB,32KiB,64KiB,128KiB,256KiB",
    },
)
EXPLORER_URL = Entry(
    "copylab explorer: {url}",
    "`./inv explore` and `./inv lab` listen on 127.0.0.1 only, so a browser on another machine cannot open that "
    "address.",
    "Forward the port over SSH from the machine with the browser (`ssh -L 8866:127.0.0.1:8866 USER@HOST`, then, "
    "on HOST, `./inv explore`), and open the printed URL there; with `--port P`, forward P instead.",
    EXPLORER,
    kind="note",
    sample={"url": "http://127.0.0.1:8866/?token=5f0c1e..."},
)


def entries() -> dict[str, Entry]:
    """Every entry by its name, in the page's order (by section, then as declared)."""
    declared = {name: value for name, value in globals().items() if isinstance(value, Entry)}
    return dict(sorted(declared.items(), key=lambda item: SECTIONS.index(item[1].section)))
