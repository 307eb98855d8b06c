"""This machine's kernel and its namespaces: what a sweep run here can meet, and the trials that fail."""

from __future__ import annotations

from copylab.error_catalogue.entry import COUNTERS, NAMESPACES, PAGES, TRANSPORT, TRIALS, URING, Entry

_ENABLE_USERNS = (
    "enable them (sysctl -w user.max_user_namespaces=15000; where AppArmor restricts them, also sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0) or run as root"
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
COUNTS_NEED_ROOT = Entry(
    "it counts the kernel's copies with BPF (bpftrace), which needs root",
    "`./inv report` without root skips its `counts` sweep, whose only job is to count the kernel's copies and "
    "transmitted skbs; the report then says they were not counted.",
    "Nothing, for a report without the kernel's counts; otherwise run as root.",
    COUNTERS,
    kind="note",
)
KERNEL_COPIES_UNCOUNTED = Entry(
    "copylab: kernel copies are not counted: {reason}",
    "The kernel's copy counts come from bpftrace, run as root; it is missing, or could not attach to the kernel's "
    "tracepoints (then the line gives bpftrace's own reason). Without root there are no counts and no line. The "
    "columns stay empty, with the reason in `kernel_copy_missing`.",
    "Install bpftrace (`sudo apt-get install bpftrace`), or run without `--kernel-copies`.",
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
USERNS_SETUP_FAILED = Entry(
    "setting up the namespaces in a user namespace: {command}: {reason}",
    "Without root, copylab makes its two namespaces and the link between them inside a user namespace, and one "
    "of the commands that does it failed; the line ends with its own reason.",
    "Check that `iproute2` is installed and user namespaces are allowed (see the lines above), or run as root.",
    NAMESPACES,
    sample={"command": "ip link add veth_srv type veth peer name veth_cli", "reason": "Operation not permitted"},
)
NETNS_COMMAND_FAILED = Entry(
    "{command}: {reason}",
    "As root, copylab makes its namespaces with `ip netns` and `ip link`, and one of those commands failed; the "
    "line gives the command and its last line of output.",
    "Run the command yourself to see the whole output; `sudo ./inv netns-down` removes what a crashed sweep left.",
    NAMESPACES,
    sample={"command": "ip netns add copylab_srv", "reason": "Cannot create namespace file: File exists"},
)
NO_PAGES_SYSCTL = Entry(
    "--sender-pages {pages}: this kernel has no {sysctl}",
    "The kernel predates the setting that chooses the sender's pages (Linux 5.10 and later have it).",
    "Leave out `--sender-pages` (and the `mmap-small` profile), or run on a newer kernel.",
    PAGES,
    sample={"pages": "small", "sysctl": "net.core.high_order_alloc_disable"},
)
PAGES_NOT_SET = Entry(
    "--sender-pages {pages}: cannot set {sysctl}: {reason}",
    "Writing the host's setting failed, most often because the process is not root after all (a container).",
    "Run as root on the host itself, or leave out `--sender-pages`.",
    PAGES,
    sample={"pages": "small", "sysctl": "net.core.high_order_alloc_disable", "reason": "Permission denied"},
)
CONGESTION_NOT_ALLOWED = Entry(
    "--congestion-control {name}: the {where} allows only {allowed} without CAP_NET_ADMIN "
    "(net.ipv4.tcp_allowed_congestion_control)",
    "The host offers the congestion control, but a process without root may only use those the kernel allows.",
    "Run as root there, or add it to `net.ipv4.tcp_allowed_congestion_control` (as root).",
    TRANSPORT,
    sample={"name": "bbr", "where": "client host lab2", "allowed": "reno, cubic"},
)
SINK_REFUSED = Entry(
    "path sink: {why}",
    "The sink path (`--path sink`) sends into a device of this machine that drops every packet: nothing is "
    "received, so only what makes sense without a receiver can run on it.",
    "Do what the line says, or leave out `--path sink`.",
    TRANSPORT,
    sample={"why": "a sink answers no request: the workload is stream only (leave out rr)"},
)
PERF_NO_ACK = Entry(
    "perf record did not acknowledge {command!r} within {timeout} s",
    "The sampler drives `perf record` through a control pipe, and perf did not answer in time: a perf too old "
    "for `--control`, or a machine too loaded.",
    "Run again on an idle machine; `perf --version` should be 5.10 or later.",
    COUNTERS,
    sample={"command": "enable", "timeout": 10},
)
CALIBRATION_FAILED = Entry(
    "{what} calibration failed: {reason}",
    "Before measuring, copylab times `memcpy` and the cost of a copy on this machine with its own C programs, "
    "and one of them failed; the line ends with its error or exit status.",
    "Run `./inv build` to rebuild the programs, and run again; a machine short of memory fails here first.",
    TRIALS,
    sample={"what": "memcpy", "reason": "mmap: Cannot allocate memory"},
)
CALIBRATION_INCOMPLETE = Entry(
    "the calibration has no copy cost for {region}",
    "The calibration a sweep recorded measured no copy whose working set fits in that cache level, so copylab "
    "cannot price a copy there.",
    "Measure the sweep again (its calibration runs first); a calibration from an older copylab lacks levels.",
    TRIALS,
    sample={"region": "L2"},
)
VERIFIED_PASS_FAILED = Entry(
    "the verified pass before measuring: {implementation} receiving by {receive}: {error} ({directory}); nothing "
    "was measured",
    "`./inv report` first runs every implementation once with the bytes checked at the receiver, and one "
    "delivered wrong bytes or failed: a bug in that program, or a machine that cannot run it.",
    "Read the error and the verified sweep's `trials.csv` in the folder the line names; report it when it is a "
    "wrong byte.",
    TRIALS,
    sample={
        "implementation": "mmap_send",
        "receive": "copy",
        "error": "byte 4096 differs",
        "directory": "data/verified-20261128T034429",
    },
)
NO_TRIAL_SUCCEEDED = Entry(
    "no trial of the {experiment} {profile} sweep succeeded; nothing to report",
    "Every trial of the sweep failed, so there is nothing to analyse.",
    "Read the `error` column of the sweep's `trials.csv`: the first trials say why.",
    TRIALS,
    sample={"profile": "quick"},
)
