"""The settings table: every sweep setting, declared once (copylab.declarations.settings says what derives from
it)."""

from __future__ import annotations

from copylab import experiments
from copylab.declarations.settings import socket_buffer
from copylab.declarations.settings.setting import EVERY_PROGRAM, ProgramOption, Setting
from copylab.formatting import fmt_size
from copylab.vocabulary.values import (
    LAYOUTS,
    PATHS,
    PINNINGS,
    RECEIVE_MODES,
    SENDER_PAGES,
    WORKLOADS,
    Column,
)

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "experiment",
        "str",
        experiments.DEFAULT.name,
        "which experiment (the copies experiment compares how bytes leave user space, the servers "
        "experiment how a server waits for connections)",
        choices=experiments.names(),
    ),
    Setting("implementations", "strs", (), "comma list of the implementations (docs/programs.md lists them)"),
    Setting("workloads", "strs", (), "comma list of stream,rr", choices=WORKLOADS),
    Setting("sizes", "sizes", (), "stream message sizes, e.g. 64,1K,64K", low=8, high=64 << 20, limit="MAX_SIZE"),
    Setting("rr_sizes", "sizes", (), "message sizes of the rr (request/response) workload", low=8, high=64 << 20),
    Setting(
        "side_sizes",
        "sizes",
        (),
        "stream sizes, among --sizes, of everything but the comparisons that decide the experiment's answers, which "
        "run at every size: the other implementations, receive modes and layouts (default: all)",
        low=8,
        high=64 << 20,
    ),
    Setting("threads", "ints", (), "thread counts, e.g. 1,2,4,8", low=1, high=64, limit="MAX_THREADS"),
    Setting(
        "connections",
        "ints",
        (),
        "servers: concurrent connections the load client keeps busy, e.g. 1,10,100,1000",
        low=1,
        high=4096,
        limit="MAX_CONNECTIONS",
    ),
    Setting(
        "idle_connections",
        "ints",
        (0,),
        "servers: connections the load client opens besides the busy ones and leaves silent, e.g. 0,100,900 (the "
        "server holds them too; select's limit counts both)",
        low=0,
        high=4096,
    ),
    Setting(
        "load",
        "str",
        "closed",
        "servers: closed (each busy connection sends its next request once the last is answered) or open (requests "
        "leave on a schedule at each of --rates, answered or not, and latency counts from the scheduled time)",
        choices=("closed", "open"),
    ),
    Setting(
        "rates",
        "ints",
        (),
        "servers, open load: requests per second offered over all busy connections, e.g. 5000,10000,20000",
        low=1,
        high=1_000_000,
        limit="MAX_RATE",
    ),
    Setting("trials", "int", 3, "trials (blocks) per configuration; with a budget, its first pass", low=1, high=1000),
    Setting(
        "duration_s", "float", 1.0, "measured window, seconds", low=0, high=3600, low_open=True, limit="MAX_DURATION"
    ),
    Setting("warmup_s", "float", 0.3, "warm-up before the window, seconds", low=0, high=600, limit="MAX_WARMUP"),
    Setting("pinning", "strs", (), "comma list of none,same_cpu,split_cpu", choices=PINNINGS),
    Setting(
        "receive",
        "strs",
        ("copy",),
        "comma list of copy,truncate,mmap: how the client takes the bytes in",
        choices=tuple(RECEIVE_MODES),
    ),
    Setting(
        "receive_for",
        "strs",
        (),
        "implementations that get the receive modes other than copy (default: all)",
    ),
    Setting(
        "seed",
        "int",
        None,
        "seed of the trial order: drawn at random for each sweep that gives none and recorded in its manifest; give "
        "the recorded one to replay a sweep's order exactly",
        low=0,
        high=2**63 - 1,
        drawn=True,
    ),
    Setting("verify", "bool", False, "check every byte received against its pattern"),
    Setting("mtu", "int", 1500, "the veth pair's MTU", low=68, high=65535),
    Setting(
        "path",
        "str",
        "veth",
        "where the sender's bytes go: veth (over the veth pair to the client, which receives them) or sink (UDP "
        "datagrams into a device of the server's namespace whose blackhole qdisc drops them once the stack has built "
        "them: no local delivery, so MSG_ZEROCOPY completes uncopied; --mtu is the device's, and datagrams over it "
        "are segmented with UDP_SEGMENT, never fragmented; stream and receive copy only; docs/method.md: The sink)",
        choices=PATHS,
        column=Column(
            "path",
            "str",
            "",
            "where the sender's bytes went: veth (to the client over the veth pair) or sink (UDP datagrams dropped by "
            "a blackhole qdisc once built; the client then counts the device's drops instead of receiving)",
            since=11,
        ),
        program=ProgramOption("--path", ("server", "client")),
    ),
    Setting(
        "optmem_max",
        "int",
        131072,
        "net.core.optmem_max inside each namespace (bounds MSG_ZEROCOPY's pinned pages in flight)",
        low=1024,
        high=1 << 30,
    ),
    Setting(
        "sender_pages",
        "str",
        SENDER_PAGES[0],
        "the pages the kernel copies a sender's bytes into, on the whole host: large (32 KiB, the kernel's "
        "default) or small (4 KiB: net.core.high_order_alloc_disable=1 for the sweep, restored after; root, one "
        "host). Over the veth the receiver can map only small ones (docs/method.md: Receiving by mapping)",
        choices=SENDER_PAGES,
    ),
    Setting(
        "sanitize",
        "str",
        None,
        "run sanitizer builds of the programs (./inv build --sanitize NAME)",
        choices=("address", "undefined", "thread"),
        optional=True,
        cli=None,
    ),
    Setting(
        "namespaces",
        "strs",
        ("copylab_srv", "copylab_cli"),
        "names of the server and client namespaces, e.g. copylab_srv,copylab_cli",
        length=2,
    ),
    Setting(
        "target_ci",
        "float",
        None,
        "adaptive repetition (--design randomized): add trials until the 95% interval half-width is within this "
        "fraction of the mean (e.g. 0.05), at least 3 trials",
        low=0,
        high=1,
        low_open=True,
        optional=True,
    ),
    Setting(
        "max_trials",
        "int",
        10,
        "adaptive repetition or a budget: at most this many trials (blocks) per configuration",
        low=2,
        high=1000,
    ),
    Setting(
        "server_host",
        "str",
        None,
        "two hosts: run the servers on USER@HOST[:PORT] over SSH (docs/testbeds.md: Two machines over SSH)",
        optional=True,
    ),
    Setting("client_host", "str", None, "two hosts: run the clients on USER@HOST[:PORT] over SSH", optional=True),
    Setting(
        "server_address",
        "str",
        None,
        "two hosts: the IPv4 address the client reaches the server at on the data path",
        optional=True,
    ),
    Setting(
        "ssh_config",
        "str",
        None,
        "two hosts: an OpenSSH client configuration file (keys, ports, known hosts)",
        optional=True,
    ),
    Setting(
        "tune_remote",
        "bool",
        False,
        "two hosts: set --mtu and --optmem-max on both hosts for the sweep, restored after",
    ),
    Setting(
        "kernel_copies",
        "bool",
        False,
        "count the bytes the kernel copies in each window with bpftrace; off unless asked for, because counting "
        "slows the traffic it counts (docs/method.md)",
    ),
    Setting(
        "calibrate",
        "bool",
        True,
        "measure memcpy bandwidth and the copy cost by working set on the sending CPU before the trials (its time: "
        "docs/measured.md; the report's copy bound and calibration finding read it; ./inv calibrate --data adds it)",
    ),
    Setting(
        "layout",
        "strs",
        ("fields",),
        "comma list of fields,aligned,contiguous: the message's 8 fields each allocated apart (the study's), each "
        "on a page boundary, or back to back in one buffer (senders that hold the message in memory)",
        choices=LAYOUTS,
    ),
    Setting(
        "layout_for",
        "strs",
        (),
        "implementations that get the layouts other than fields (default: those the sweep names, or with a "
        "profile's implementations, those whose layout can be chosen)",
    ),
    Setting(
        "zc_inflight",
        "int",
        None,
        "bytes of messages a zero-copy sender keeps in flight before it waits for completions. Default: twice the "
        "path's bandwidth-delay product measured at the sweep's start, at least 256 KiB (over veth a short ring "
        "paces the sender by its completions: 256 KiB moved up to twice as much as 8 MiB, 16-256 KiB messages)",
        optional=True,
        legacy=256 << 10,  # the ring was a compiled constant of 256 KiB before the setting existed
        low=4096,
        high=1 << 30,
        limit="MAX_ZC_INFLIGHT",
        column=Column(
            "zc_inflight_bytes",
            "int",
            "B",
            "bytes of messages the zero-copy senders kept in flight at most (--zc-inflight, or chosen from the path: "
            "the manifest's in_flight); empty when not set and no zero-copy sender ran",
            since=5,
        ),
        program=ProgramOption("--zc-inflight", ("server",)),
    ),
    Setting(
        "distinct_messages",
        "int",
        1,
        "distinct messages each sender cycles through, each held as --layout says: 1 keeps its source hot in the "
        "caches, thousands make it cold, as a server's data would be (zero-copy senders: at least the messages "
        "their ring keeps in flight; at most 1 GiB of messages)",
        low=1,
        high=65536,
        limit="MAX_DISTINCT_MESSAGES",
        legacy=1,  # before the setting existed the copying senders sent one message, the zero-copy ones their ring
        column=Column(
            "distinct_messages",
            "int",
            "count",
            "distinct messages each sender cycled through (--distinct-messages; zero-copy senders: at least their "
            "ring's); 1 in sweeps from before it was recorded",
            since=11,
        ),
        program=ProgramOption("--distinct-messages", ("server",)),
    ),
    Setting(
        "congestion_control",
        "str",
        "cubic",
        "TCP congestion control of every connection, set on each socket at both ends (the kernel must offer it). "
        "Default cubic, the kernel's own default: with bbr, which some hosts choose, TCP paces its sends by a "
        "timer, and over veth that pacing, not the copies, bounded messages of 64 KiB and more "
        "(docs/method.md: Why cubic)",
        legacy="",  # before the setting existed every connection used the host's default, unrecorded
        column=Column(
            "congestion_control",
            "str",
            "",
            "the TCP congestion control every connection of the trial used (--congestion-control; as the programs "
            "read it back from their sockets); empty in sweeps from before it was recorded: the host's default",
            since=9,
        ),
        program=ProgramOption("--congestion-control", EVERY_PROGRAM),
    ),
    Setting(
        "socket_buffer",
        "int",
        None,
        "bytes of send and receive buffer of every connection at both ends, which the kernel doubles for its "
        "bookkeeping and then leaves alone; 0 leaves the buffers to the kernel, which grows them as a connection "
        f"goes. Default {fmt_size(socket_buffer.PREFERRED)}, or less where an end caps it for a user without root "
        "(net.core.[rw]mem_max): the kernel's own sizing settled each connection at a size of its own for its "
        "life, and with both ends on one CPU each size had its own throughput (docs/method.md: The socket buffers)",
        low=0,
        high=1 << 29,
        optional=True,
        limit="MAX_SOCKET_BUFFER",
        legacy=0,  # before the setting existed the kernel sized every buffer
        chosen_on=socket_buffer.default_on,
        column=Column(
            "socket_buffer_bytes",
            "int",
            "B",
            "the send and receive buffer every connection of the trial asked for (--socket-buffer, or the sweep's "
            "choice; 0: sized by the kernel as the connection went; the programs refuse to run when the kernel "
            "holds another size)",
            since=10,
        ),
        program=ProgramOption("--socket-buffer", EVERY_PROGRAM),
    ),
    Setting(
        "design",
        "str",
        "blocked",
        "blocked (each block runs every implementation of a point back to back, comparisons pair them) or "
        "randomized (the whole grid in one random order, unpaired)",
        choices=("blocked", "randomized"),
        legacy="randomized",
    ),
    Setting(
        "budget_s",
        "float",
        None,
        "a blocked sweep's time budget in seconds: after the first pass, blocks go to the comparisons that decide "
        "the experiment's answers and are still undecided, then to the other implementations (0: the first pass "
        "alone)",
        low=0,
        high=7 * 24 * 3600,
        optional=True,
    ),
)
