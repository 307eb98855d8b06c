"""A sweep's settings (from a profile, a sweep file or the options) that copylab refuses before anything runs."""

from __future__ import annotations

from copylab.error_catalogue.entry import NAMESPACES, OPTIONS, SERVERS, Entry

_OPTIONS_PAGE = "[reference/options.md](reference/options.md) gives every setting, its values and its limits."

UNKNOWN_SETTINGS = Entry(
    "unknown sweep setting(s) {names}",
    "A sweep's `manifest.json` names settings this copylab does not have: it was written by a newer copylab, or "
    "edited.",
    "Read the sweep with the copylab that measured it (its commit is in the manifest).",
    OPTIONS,
    sample={"names": "frame_size"},
)
UNKNOWN_SETTINGS_IN_FILE = Entry(
    "unknown sweep setting(s): {names}",
    "A sweep file (`--sweep-file`) or a profile names settings copylab does not have, often a typo or an option "
    "written with dashes.",
    "Write each setting as its name in " + _OPTIONS_PAGE.replace(" gives every", ", with underscores; it lists every"),
    OPTIONS,
    sample={"names": "message-sizes"},
)
SWEEP_FILE_UNREADABLE = Entry(
    "sweep file {path}: {error}",
    "The sweep file cannot be read, or is not TOML; the line ends with the reader's own reason.",
    "Fix the file at the line named; a sweep file holds `setting = value` lines, as in `sweeps/`.",
    OPTIONS,
    sample={"path": "my-sweep.toml", "error": "Expected '=' after a key in a key/value pair (at line 3, column 7)"},
)
NEEDS_A_VALUE = Entry(
    "{label}: needs a value",
    "The setting has no default and was given none.",
    "Give it a value. " + _OPTIONS_PAGE,
    OPTIONS,
    sample={"label": "duration"},
)
NOT_A_LIST = Entry(
    "{label}: {value!r} is not a list",
    "A sweep file gave one value where the setting takes a list.",
    "Write it as a list, `sizes = [1024, 4096]`.",
    OPTIONS,
    sample={"label": "sizes", "value": 1024},
)
NAMED_TWICE = Entry(
    "{label}: {values} names a value twice",
    "A list setting holds the same value twice, which would measure one configuration twice over.",
    "Give each value once.",
    OPTIONS,
    sample={"label": "sizes", "values": "1024, 4096, 1024"},
)
WRONG_LENGTH = Entry(
    "{label}: give {length} values, not {given}",
    "The setting takes a fixed number of values.",
    "Give that many. " + _OPTIONS_PAGE,
    OPTIONS,
    sample={"label": "namespaces", "length": 2, "given": 3},
)
NOT_TRUE_OR_FALSE = Entry(
    "{label}: {value!r} is not true or false",
    "A switch was given another value in a sweep file.",
    "Write `true` or `false`.",
    OPTIONS,
    sample={"label": "verify", "value": "yes"},
)
NOT_A_NAME = Entry(
    "{label}: {value!r} is not a name",
    "A setting that takes names was given something else in a sweep file, such as a number.",
    'Write the name as a string, in quotes: `receive = ["copy"]`.',
    OPTIONS,
    sample={"label": "receive", "value": 1},
)
NOT_A_NUMBER = Entry(
    "{label}: {value!r} is not a {kind}",
    "A numeric setting was given something else, or a fraction where it counts whole things.",
    "Give a number as the line says. " + _OPTIONS_PAGE,
    OPTIONS,
    sample={"label": "threads", "value": 1.5, "kind": "whole number"},
)
OUT_OF_RANGE = Entry(
    "{label}: {value!r} is out of range ({span})",
    "The value is outside the limits copylab measures within.",
    "Give a value within the range the line names. " + _OPTIONS_PAGE,
    OPTIONS,
    sample={"label": "duration", "value": 0, "span": "above 0 to 3600"},
)
UNKNOWN_CHOICE = Entry(
    "{label}: unknown {value!r} (choose from {choices})",
    "The setting takes one of a fixed list of names, and this is not one of them (often a typo).",
    "Choose one of the names listed.",
    OPTIONS,
    sample={"label": "receive", "value": "mmap", "choices": "copy, splice, zerocopy"},
)
BAD_SWEEP_NAME = Entry(
    "sweep name {name!r}: use letters, digits, '.', '_' or '-' (no '/' or spaces)",
    "A sweep's name is the name of its folder under `data/`.",
    "Choose a name of those characters.",
    OPTIONS,
    sample={"name": "my sweep"},
)
REFUSED_BY_EXPERIMENT = Entry(
    "{option}: {reason}",
    "The experiment chosen does not take that setting, or takes only some of its values; the line says why.",
    "Leave the setting out, or choose the experiment that has it (`--experiment`).",
    OPTIONS,
)
NO_VALUE_GIVEN = Entry(
    "{label}: needs at least one value",
    "A list setting was given an empty list: the sweep would have nothing to measure.",
    "Give at least one value.",
    OPTIONS,
    sample={"label": "threads"},
)
SIDE_SIZES_OUTSIDE = Entry(
    "side-sizes: {outside} not among --sizes (side sizes are a subset of them)",
    "Side contenders run at a few of the sweep's sizes, so each side size must be one of `--sizes`.",
    "Add those sizes to `--sizes`, or drop them from `--side-sizes`.",
    OPTIONS,
    sample={"outside": "3000"},
)
NOT_OF_THE_SWEEP = Entry(
    "{label}: {names} (give implementations of the sweep)",
    "A setting names implementations that the sweep does not measure.",
    "Name only implementations listed in `--implementations` (or the experiment's own word for them).",
    OPTIONS,
    sample={"label": "layout-for", "names": "mmap_send"},
)
LAYOUT_FIXED = Entry(
    "layout: {name}'s message layout cannot be chosen (it is {held}); leave it out, or name the senders with "
    "--layout-for",
    "Some senders hold their messages in one layout only, so `--layout` cannot apply to them.",
    "Leave out `--layout`, or name the senders it applies to with `--layout-for`.",
    OPTIONS,
    sample={"name": "pack_copy", "held": "packed"},
)
NO_LAYOUT_GIVEN = Entry(
    "layout: needs at least one value",
    "`--layout` was given an empty list.",
    "Give at least one layout, or leave the option out.",
    OPTIONS,
)
SOCKET_BUFFER_TOO_SMALL = Entry(
    "socket-buffer: {asked} is below the {smallest} bytes the kernel grants as asked (0 leaves the buffers to the "
    "kernel)",
    "The kernel doubles a socket buffer asked for and never grants less than its minimum, so a smaller size would "
    "not be what is measured.",
    "Ask for at least that many bytes, or 0 to leave the buffers to the kernel.",
    OPTIONS,
    sample={"asked": 1024},
)
OPEN_LOAD_NEEDS_RATES = Entry(
    "rates: an open load needs the rates it offers, e.g. --rates 5000,10000,20000",
    "An open load sends requests at fixed rates, and none were given.",
    "Give the rates with `--rates`.",
    OPTIONS,
)
RATES_NEED_OPEN_LOAD = Entry(
    "rates: only an open load offers a rate (add --load open)",
    "A closed load sends the next request when the answer comes, so it has no rate.",
    "Add `--load open`, or leave out `--rates`.",
    OPTIONS,
)
TARGET_CI_NEEDS_RANDOMIZED = Entry(
    "target-ci: adaptive repetition is for --design randomized; a blocked sweep spends a --budget on the comparisons "
    "still undecided instead",
    "`--target-ci` repeats trials until each interval is narrow enough, which only a randomized design does.",
    "Add `--design randomized`, or give a blocked sweep a `--budget` instead.",
    OPTIONS,
)
TOO_FEW_MAX_TRIALS = Entry(
    "max-trials: adaptive repetition needs at least {least}",
    "Adaptive repetition needs a few trials of each configuration before it can tell their spread.",
    "Give `--max-trials` at least that many.",
    OPTIONS,
)
BUDGET_NEEDS_BLOCKED = Entry(
    "budget: only a blocked sweep (--design blocked) spends a time budget",
    "A time budget is spent on the comparisons still undecided, which only a blocked design has.",
    "Add `--design blocked`, or leave out `--budget`.",
    OPTIONS,
)
MAX_TRIALS_BELOW_FIRST_PASS = Entry(
    "max-trials: {most} is fewer than the first pass's {trials}",
    "`--max-trials` caps the trials of a configuration, first pass included.",
    "Give `--max-trials` at least `--trials`.",
    OPTIONS,
    sample={"most": 3, "trials": 5},
)
MORE_NEEDS_BLOCKED = Entry(
    "{directory}: only a blocked sweep takes more time where it is still undecided",
    "`--more` spends time on the comparisons of a sweep still undecided, which only a blocked sweep records.",
    "Measure a blocked sweep (`--design blocked`), or run a new sweep.",
    OPTIONS,
    sample={"directory": "data/sweep"},
)
TOO_MANY_CONNECTIONS = Entry(
    "{label}: {total} connections are more than {most}",
    "The connections asked for (busy and idle together) are more than copylab measures.",
    "Ask for fewer.",
    SERVERS,
    sample={"label": "connections", "total": 100000, "most": 65536},
)
NOT_ENOUGH_MEMORY = Entry(
    "sizes: {largest} B messages need about {needed} MiB at the two ends ({threads} threads, {distinct} distinct "
    "messages) and this host has {available} MiB available",
    "Each sender thread holds its distinct messages in memory, at both ends; the largest size asked for would not "
    "fit in the memory this host has free.",
    "Drop the largest sizes, or ask for fewer `--threads` or `--distinct-messages`.",
    OPTIONS,
    sample={"largest": 67108864, "threads": 4, "distinct": 8, "available": 1900},
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
ALIAS_AND_IMPLEMENTATIONS = Entry(
    "give --{noun} or --implementations, not both",
    "An experiment's own word for its implementations (`--models` for the servers) and `--implementations` name "
    "the same list.",
    "Give one of the two.",
    OPTIONS,
)
ALIAS_OF_ANOTHER_EXPERIMENT = Entry(
    "--{noun}: only the {experiment} experiment has {noun} (add --experiment {experiment})",
    "The option belongs to one experiment, and another was chosen (or none, which means `copies`).",
    "Add the `--experiment` the line names.",
    OPTIONS,
)
SECONDS_OUT_OF_RANGE = Entry(
    "--{option}: {value} is out of range (seconds above 0, at most a day)",
    "A time option takes seconds, above 0 and at most a day.",
    "Give the seconds within that range.",
    OPTIONS,
    sample={"option": "budget", "value": "0"},
)
MORE_NEEDS_DATA = Entry(
    "--more: name the report's sweeps with --data (the report prints the whole command)",
    "`--more` gives more time to the sweeps of a report already measured, and none were named.",
    "Run the command the report printed at its end, which names its sweeps with `--data`.",
    OPTIONS,
)
BUDGET_WITH_DATA = Entry(
    "--budget: only a report that measures spends one (with --data, --more adds time)",
    "With `--data` the report renders sweeps already measured, so there is no measuring to budget.",
    "Leave out `--budget`, or give `--more SECONDS` to measure more of those sweeps.",
    OPTIONS,
)
MORE_ON_REFERENCE = Entry(
    "--more: {names} is a committed reference; measure a sweep of your own",
    "The references under `data/` are committed as measured, so they are never added to.",
    "Measure a sweep of your own (`./inv report`), then add time to it.",
    OPTIONS,
    sample={"names": "reference"},
)
WORKERS_OUT_OF_RANGE = Entry(
    "--workers: {count} is out of range (1 to {cpus})",
    "Each worker takes a CPU of this machine.",
    "Give at most as many workers as the machine has CPUs (`nproc`).",
    OPTIONS,
    sample={"count": 8, "cpus": 2},
)
EMPTY_LIST_ITEM = Entry(
    "empty item in the list {text!r}",
    "A comma-separated option has an empty item (two commas in a row, or one at the end).",
    "Remove the extra comma.",
    OPTIONS,
    sample={"text": "1K,,4K"},
)
NOT_A_LIST_OF_NUMBERS = Entry(
    "{text!r} is not a comma-separated list of numbers",
    "An option that takes numbers (sizes, threads, connections) was given something else; sizes may end in K or M.",
    "Write numbers separated by commas, no spaces: `--sizes 1K,4K,64K`.",
    OPTIONS,
    sample={"text": "1K;4K"},
)
OPTION_NOT_A_NUMBER = Entry(
    "--{label}: {text!r} is not a number",
    "The option takes a number.",
    "Give a number.",
    OPTIONS,
    sample={"label": "duration", "text": "2s"},
)
NOT_A_PORT = Entry(
    "--port: {port} is not a port (1 to 65535)",
    "A TCP port is a number from 1 to 65535.",
    "Give one in that range, free on this machine.",
    OPTIONS,
    sample={"port": 70000},
)
UNKNOWN_IMPLEMENTATION = Entry(
    "unknown implementation {name!r} (choose from {choices})",
    "No implementation of that name is registered (often a typo).",
    "Choose one of the names listed; [reference/implementations.md](reference/implementations.md) describes each.",
    OPTIONS,
    sample={"name": "zerocopy", "choices": "two_copy, one_copy, zero_copy, mmap_send"},
)
UNKNOWN_RECEIVE_MODE = Entry(
    "unknown receive mode {receive!r} in {label!r} (choose from {choices})",
    "A contender is named `IMPLEMENTATION/RECEIVE`, and the part after `/` is no receive mode.",
    "Choose one of the receive modes listed.",
    OPTIONS,
    sample={"receive": "mmap", "label": "zero_copy/mmap", "choices": "copy, splice, zerocopy"},
)
NAMESPACES_ALIKE = Entry(
    "the server and client namespaces need different names",
    "The two ends of a sweep run in two namespaces, and `--namespaces` named one twice.",
    "Give two names: `--namespaces srv2,cli2`.",
    NAMESPACES,
)
BAD_NAMESPACE_NAME = Entry(
    "namespace name {name!r} must be a lowercase letter then up to 30 of [a-z0-9_]",
    "copylab names its namespaces and their network devices after them, and the kernel limits a device's name.",
    "Choose names of that form: `--namespaces srv2,cli2`.",
    NAMESPACES,
    sample={"name": "Server-1"},
)
BAD_NAMESPACE_ADDRESS = Entry(
    "bad namespace address: {error}",
    "An address given for the namespaces' link is not an IPv4 address.",
    "Give two addresses of one private subnet, such as 10.77.0.1 and 10.77.0.2.",
    NAMESPACES,
    sample={"error": "'10.77.0.300' does not appear to be an IPv4 or IPv6 address"},
)
NAMESPACE_SUBNET = Entry(
    "{server} and {client} must be two addresses of one private /{prefix} subnet",
    "The namespaces' link is a private network of its own: both ends in one private subnet.",
    "Give two addresses of one private subnet (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16).",
    NAMESPACES,
    sample={"server": "10.77.0.1", "client": "10.78.0.2", "prefix": 24},
)
MTU_OUT_OF_RANGE = Entry(
    "MTU {mtu} is outside 68..65535",
    "The kernel takes an MTU from 68 to 65535 bytes.",
    "Give one in that range.",
    NAMESPACES,
    sample={"mtu": 70000},
)
OPTMEM_OUT_OF_RANGE = Entry(
    "optmem_max {optmem} is outside 1024..67108864",
    "copylab sets the namespaces' `net.core.optmem_max` within those bounds.",
    "Give a value in that range.",
    NAMESPACES,
    sample={"optmem": 512},
)
