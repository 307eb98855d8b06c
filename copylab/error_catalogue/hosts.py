"""Two hosts: the options that name them, SSH, the runner copylab starts on each, and a fleet of pairs."""

from __future__ import annotations

from copylab.error_catalogue.entry import HOSTS, Entry

_TWO_HOSTS = "[testbeds.md](testbeds.md) says how a sweep between two hosts is set up."
_RESUME = "Check that the host is up and reachable (`ssh USER@HOST true`), then run the task again with `--resume`."
_FLEET = "A fleet file holds one `[[pair]]` table per pair of hosts, with its `name`, `server_host` and `client_host`."

ONLY_FOR_TWO_HOSTS = Entry(
    "{label}: only for two hosts (give --server-host and --client-host)",
    "The option sets something of a sweep between two hosts, and this sweep runs on one machine.",
    "Leave it out, or give both hosts. " + _TWO_HOSTS,
    HOSTS,
    sample={"label": "server-address"},
)
TUNE_REMOTE_ONE_HOST = Entry(
    "tune-remote: only for two hosts (give --server-host and --client-host)",
    "`--tune-remote` changes settings of two remote hosts, and this sweep runs on one machine.",
    "Leave it out, or give both hosts.",
    HOSTS,
)
SENDER_PAGES_ONE_HOST = Entry(
    "sender-pages: {pages} is for one host only (over a NIC the receiving driver's pages, not the sender's, decide "
    "what the receiver can map)",
    "Between two hosts the network card's driver chooses the receiver's pages, so the sender's pages change "
    "nothing a trial measures.",
    "Leave out `--sender-pages` (and the `mmap-small` profile) between two hosts.",
    HOSTS,
    sample={"pages": "small"},
)
HOST_MISSING = Entry(
    "{label}: missing (a two-host sweep needs both --server-host and --client-host)",
    "A sweep between two hosts was given one of them.",
    "Give both. " + _TWO_HOSTS,
    HOSTS,
    sample={"label": "client-host"},
)
BAD_HOST = Entry(
    "{label}: {value!r} is not USER@HOST or USER@HOST:PORT",
    "A host is named as SSH would log in to it.",
    "Write it as `USER@HOST` (or `USER@HOST:PORT`), or as a `Host` of your SSH config.",
    HOSTS,
    sample={"label": "server-host", "value": "lab1:ssh"},
)
BAD_HOST_PORT = Entry(
    "{label}: port {port} is not from 1 to 65535",
    "The port after `:` is SSH's, a number from 1 to 65535.",
    "Give the port the host's SSH server listens on (22 unless told otherwise).",
    HOSTS,
    sample={"label": "server-host", "port": 70000},
)
SERVER_ADDRESS_MISSING = Entry(
    "server-address: missing (where the client reaches the server on the data path)",
    "Between two hosts, the client sends to the server's address on the network being measured, which may differ "
    "from the one SSH uses.",
    "Give `--server-address`, the server's IPv4 address on that network.",
    HOSTS,
)
BAD_SERVER_ADDRESS = Entry(
    "server-address: {address!r} is not an IPv4 address",
    "`--server-address` takes the server's IPv4 address, not a host name.",
    "Give an address such as 192.168.1.20 (`ip -4 addr` on the server lists its addresses).",
    HOSTS,
    sample={"address": "lab1"},
)
SSH_CONFIG_UNREADABLE = Entry(
    "ssh-config: {path} is not a readable file",
    "`--ssh-config` names the SSH config file copylab reads hosts from, and there is none there.",
    "Give the path of an SSH config file, or leave the option out to use `~/.ssh/config`.",
    HOSTS,
    sample={"path": "~/.ssh/lab"},
)
REPORT_SSH_CONFIG_UNREADABLE = Entry(
    "--ssh-config: {path} is not a readable file",
    "As above, for `./inv report`.",
    "Give the path of an SSH config file, or leave the option out to use `~/.ssh/config`.",
    HOSTS,
    sample={"path": "~/.ssh/lab"},
)
HOSTS_WITH_DATA = Entry(
    "--data and --more render sweeps already measured: leave out the host options",
    "With `--data` the report measures nothing, so it has no hosts to measure on.",
    "Leave out the host options, or leave out `--data` to measure between the hosts.",
    HOSTS,
)
FLEET_WITH_HOSTS = Entry(
    "--fleet: its file names every pair's hosts; leave out --server-host and the like",
    "A fleet report measures the pairs of hosts its file lists.",
    "Leave out the host options, or leave out `--fleet` to measure one pair.",
    HOSTS,
)
HOSTS_GO_TOGETHER = Entry(
    "--server-host and --client-host go together (a report between two hosts needs both)",
    "A report between two hosts was given one of them.",
    "Give both. " + _TWO_HOSTS,
    HOSTS,
)
CANNOT_RESOLVE = Entry(
    "server-host: cannot resolve {host!r}; give --server-address",
    "Without `--server-address`, copylab takes the server's address from its name, and the name resolves to none.",
    "Give `--server-address`, the server's IPv4 address on the network being measured.",
    HOSTS,
    sample={"host": "lab1"},
)
LOOPBACK_SERVER = Entry(
    "server-host: {host} is this machine's loopback; give --server-address",
    "The server's name resolves to 127.0.0.1 here (often through /etc/hosts or an SSH alias), which the client "
    "would send to itself.",
    "Give `--server-address`, the server's IPv4 address on the network being measured.",
    HOSTS,
    sample={"host": "lab1"},
)
NO_INTERFACE = Entry(
    "{label}: no interface there has the address {address}",
    "The server's address on the data path belongs to none of the server's network interfaces.",
    "Give the address of one of the server's interfaces with `--server-address` (`ip -4 addr` there lists them).",
    HOSTS,
    sample={"label": "server host lab1", "address": "192.168.1.20"},
)
HOST_KEY_CHANGED = Entry(
    "{host}: its host key does not match known_hosts (a changed or impersonated host); fix known_hosts",
    "The host presented another key than the one recorded in `known_hosts`: it was reinstalled, or something "
    "stands in for it.",
    "Check with the host's owner; when the change is expected, `ssh-keygen -R HOST` forgets the old key, then "
    "`ssh HOST` records the new one.",
    HOSTS,
    sample={"host": "lab1"},
)
KEYS_REFUSED = Entry(
    "{host}: the SSH server refused every key offered (copylab uses your agent, keys and ssh config and never asks "
    "for a password)",
    "copylab logs in with keys only, and the host accepted none of those offered.",
    "Check that `ssh USER@HOST true` logs in without a password (`ssh-copy-id USER@HOST` installs your key).",
    HOSTS,
    sample={"host": "lab1"},
)
HOST_KEY_UNKNOWN = Entry(
    "{host}: its host key is unknown; connect once with ssh to check and record it, or set StrictHostKeyChecking "
    "accept-new in the ssh config",
    "copylab logs in only to hosts whose key `known_hosts` records, unless the SSH config says otherwise.",
    "Log in once with `ssh USER@HOST` and accept the key after checking it.",
    HOSTS,
    sample={"host": "lab1"},
)
SSH_FAILED = Entry(
    "{host}: SSH failed: {error}",
    "The SSH connection could not be set up; the line ends with the SSH library's own reason.",
    "Try `ssh -v USER@HOST true` to see where it stops.",
    HOSTS,
    sample={"host": "lab1", "error": "Error reading SSH protocol banner"},
)
SSH_UNREACHABLE = Entry(
    "{host}: cannot connect over SSH ({reason})",
    "The host did not answer on its SSH port: down, a wrong name or port, or a firewall.",
    "Check that `ssh USER@HOST true` works from this machine.",
    HOSTS,
    sample={"host": "lab1", "reason": "Connection refused"},
)
TOOLS_MISSING_THERE = Entry(
    "{label}: {tools} not found (copylab builds and runs its C programs there, under a runner in python3: install "
    "python3 gcc make tar coreutils util-linux procps)",
    "copylab builds its C programs on each host and runs them under a small runner in Python, so each host needs "
    "those tools.",
    "Install them there: `sudo apt-get install python3 gcc make tar coreutils util-linux procps`.",
    HOSTS,
    sample={"label": "client host lab2", "tools": "gcc, make"},
)
CANNOT_READ_CAPS = Entry(
    "{label}: cannot read {files}",
    "copylab reads the host's caps on socket buffers before a sweep, and could not.",
    "Check that the host runs Linux and that `cat` works there over SSH.",
    HOSTS,
    sample={"label": "client host lab2", "files": "/proc/sys/net/core/wmem_max, /proc/sys/net/core/rmem_max"},
)
RUNNER_NOT_STARTED = Entry(
    "{label}: cannot start copylab's runner there ({error})",
    "copylab starts a small Python runner on each host, which starts and watches the programs there; it did not start.",
    "Check that `python3` runs there (`ssh USER@HOST python3 -V`), and that the host's disk is not full.",
    HOSTS,
    sample={"label": "server host lab1", "error": "lab1: its runner did not start (no answer within 30 s)"},
)
SFTP_FAILED = Entry(
    "{label}: cannot copy the C sources there over SFTP ({error})",
    "copylab copies its C sources to each host with SFTP, and the copy failed.",
    "Check that the host's SSH server offers SFTP (`sftp USER@HOST`) and that its disk is not full.",
    HOSTS,
    sample={"label": "server host lab1", "error": "Permission denied"},
)
REMOTE_BUILD_FAILED = Entry(
    "{label}: the C build failed: {reason}",
    "The C programs copylab needs on each host did not build there; the line ends with the compiler's last line.",
    "Install what the build needs on that host: `sudo apt-get install gcc make libc6-dev liburing-dev`.",
    HOSTS,
    sample={"label": "client host lab2", "reason": "make: gcc: No such file or directory"},
)
TUNE_FAILED = Entry(
    "{label}: --tune-remote failed: {error} (it needs root there)",
    "`--tune-remote` sets the host's MTU and `net.core.optmem_max`, which needs root there.",
    "Log in as root there (`root@HOST`), or leave out `--tune-remote`.",
    HOSTS,
    sample={"label": "server host lab1", "error": "sysctl: permission denied on key 'net.core.optmem_max'"},
)
CONNECTION_LOST = Entry(
    "{error}; the connection was lost during the sweep: everything measured is saved, finish with --resume",
    "A host went away during the sweep, and copylab could not connect to it again.",
    _RESUME,
    HOSTS,
    sample={"error": "client host lab2: cannot connect over SSH (No route to host)"},
)
END_LOST = Entry(
    "{label}: {lost}",
    "A host's runner stopped answering, or its SSH connection broke, while a trial ran; the trial is recorded as "
    "failed with this line.",
    _RESUME,
    HOSTS,
    sample={"label": "client host lab2", "lost": "the SSH connection broke (Socket is closed)"},
)
RUNNER_NOT_ANSWERING = Entry(
    "{label}: its runner did not start ({why})",
    "copylab's runner on the host did not say it was ready.",
    "Check that `python3` runs there (`ssh USER@HOST python3 -V`).",
    HOSTS,
    sample={"label": "server host lab1", "why": "no answer within 30 s"},
)
REQUEST_FAILED = Entry(
    "{label}: {what} failed: {error}",
    "The host's runner, or a command copylab ran there, failed; the line ends with its own reason.",
    "Read the reason; a full disk or a missing tool on the host is the usual cause.",
    HOSTS,
    sample={"label": "server host lab1", "what": "tar", "error": "tar: Cannot open: No space left on device"},
)
NOT_CONNECTED = Entry(
    "{label}: not connected (while trying to {purpose})",
    "The SSH connection to the host was already gone.",
    _RESUME,
    HOSTS,
    sample={"label": "server host lab1", "purpose": "read its congestion controls"},
)
SSH_BROKE = Entry(
    "{label}: the SSH connection broke ({error})",
    "The SSH connection to the host broke while copylab used it.",
    _RESUME,
    HOSTS,
    sample={"label": "server host lab1", "error": "Socket is closed"},
)
FLEET_PAIR_NOT_A_TABLE = Entry(
    "{where}: not a table (write [[pair]] above its keys)",
    _FLEET,
    "Write `[[pair]]` above each pair's keys.",
    HOSTS,
    sample={"where": "fleet: fleet.toml: pair 1"},
)
FLEET_PAIR_UNKNOWN_KEY = Entry(
    "{where}: unknown key {key!r} (a pair has {keys})",
    _FLEET,
    "Use only the keys the line lists.",
    HOSTS,
    sample={"where": "fleet: fleet.toml: pair 1", "key": "server", "keys": "name, server_host, client_host"},
)
FLEET_PAIR_KEY_MISSING = Entry(
    "{where}: {key} is missing",
    _FLEET,
    "Add the key.",
    HOSTS,
    sample={"where": "fleet: fleet.toml: pair 1", "key": "client_host"},
)
FLEET_PAIR_NOT_A_STRING = Entry(
    "{where}: {key} is not a string",
    _FLEET + " Each value is a string, in quotes.",
    'Put the value in quotes: `name = "lab1-lab2"`.',
    HOSTS,
    sample={"where": "fleet: fleet.toml: pair 1", "key": "name"},
)
FLEET_BAD_NAME = Entry(
    "{where}: name {name!r} is not letters, digits, '.', '_' or '-' (64 at most)",
    "A pair's name names its sweeps' folders.",
    "Choose a name of those characters.",
    HOSTS,
    sample={"where": "fleet: fleet.toml: pair 1", "name": "lab 1"},
)
FLEET_PAIR_REFUSED = Entry(
    "fleet: {path}: pair {name}: {error}",
    "One pair of the fleet cannot be measured; the line ends with why.",
    "Do what the rest of the line says for that pair, or remove the pair from the file.",
    HOSTS,
    sample={
        "path": "fleet.toml",
        "name": "lab1-lab2",
        "error": "server-host: cannot resolve 'lab1'; give --server-address",
    },
)
FLEET_UNREADABLE = Entry(
    "fleet: {path}: cannot read it ({reason})",
    "The fleet file named by `--fleet` cannot be opened.",
    "Check the path.",
    HOSTS,
    sample={"path": "fleet.toml", "reason": "No such file or directory"},
)
FLEET_NOT_TOML = Entry(
    "fleet: {path}: not TOML ({error})",
    "The fleet file is not TOML; the line ends with where the reader stopped.",
    "Fix the file there. " + _FLEET,
    HOSTS,
    sample={"path": "fleet.toml", "error": "Expected '=' after a key in a key/value pair (at line 2, column 8)"},
)
FLEET_UNKNOWN_KEY = Entry(
    "fleet: {path}: unknown key {key!r} (a fleet file holds [[pair]] tables only)",
    _FLEET,
    "Remove the key.",
    HOSTS,
    sample={"path": "fleet.toml", "key": "budget"},
)
FLEET_EMPTY = Entry(
    "fleet: {path}: no [[pair]] table",
    _FLEET,
    "Add a `[[pair]]` table for each pair of hosts.",
    HOSTS,
    sample={"path": "fleet.toml"},
)
FLEET_NAME_TWICE = Entry(
    "fleet: {path}: the name {name!r} is given to two pairs",
    "Each pair's name names its sweeps' folders, so no two pairs may share one.",
    "Give each pair a name of its own.",
    HOSTS,
    sample={"path": "fleet.toml", "name": "lab1-lab2"},
)
