"""docs/troubleshooting.md, generated from the catalogue of what a user can meet (copylab.error_catalogue):
`python -m copylab.cli.troubleshooting > docs/troubleshooting.md`; a test fails when the committed page is stale.

The numbers a line quotes that the code computes (how many descriptors a connection count needs, how many
connections a select server holds) are taken from the code here, never typed into the page.
"""

from __future__ import annotations

import sys
from typing import Any

from copylab import error_catalogue, experiments
from copylab.declarations import config, implementations, settings
from copylab.declarations.schema import SCHEMA_VERSION
from copylab.declarations.settings import socket_buffer
from copylab.vocabulary.limits import SMALLEST_SOCKET_BUFFER

FD_SETSIZE = 1024  # glibc's, which the select server's sets are compiled with

INTRODUCTION = """# Troubleshooting

<!-- Generated from copylab/error_catalogue/ by `python -m copylab.cli.troubleshooting`: edit the catalogue,
not this page. -->

copylab turns every bad input and every environment it cannot use into one line on stderr, starting with
`copylab: error:`, and exits with status 2 (a sweep with failed trials exits 1, an interrupted task 130). This
page lists the lines of its catalogue (`copylab/error_catalogue/`), as printed (the names, numbers and reasons
in them vary), with their cause and what to do, and the notes a task prints and goes on after. A line not listed
here says what to do in itself: it names the option or file at fault.

How copylab runs with and without root is in [testbeds.md](testbeds.md); what each setting does is in
[reference/options.md](reference/options.md).
"""

REPORTING = """## Reporting a problem

Tell whoever gave you copylab: your course's staff, or the repository you cloned it from (`git remote get-url
origin` names it), in an issue there. Give the command, the one-line error, `uname -r`, `copylab --version`, and
the sweep's `manifest.json` when a sweep ran: it records the host, the toolchain, the commit and what perf
supports.
"""


def derived_samples() -> dict[str, dict[str, Any]]:
    """The values of the page's samples that the code computes, by entry name."""
    limited = [impl for impl in implementations.registry().values() if impl.max_connections is not None]
    most = int(error_catalogue.TOO_FEW_DESCRIPTORS.sample["most"])
    first = next(iter(socket_buffer.CAPS))
    memory = error_catalogue.NOT_ENOUGH_MEMORY.sample
    asking = config.make_config(
        "x",
        "quick",
        workloads=["stream"],
        sizes=[memory["largest"]],
        rr_sizes=[],
        threads=[memory["threads"]],
        distinct_messages=memory["distinct"],
    )
    refused, reason = next(iter(experiments.main().refuses.items()))
    # the experiments' and implementations' names come from their declarations, never typed in here
    main = experiments.main().name
    other = next(experiment for experiment in experiments.EXPERIMENTS.values() if experiment.name != main)
    others = [impl.name for impl in implementations.registry().values() if impl.experiment == other.name]
    aliased = next(
        experiment for experiment in experiments.EXPERIMENTS.values() if experiment.noun != "implementations"
    )
    return {
        "NO_TRIAL_SUCCEEDED": {"experiment": main},
        "ALIAS_AND_IMPLEMENTATIONS": {"noun": aliased.noun},
        "ALIAS_OF_ANOTHER_EXPERIMENT": {"noun": aliased.noun, "experiment": aliased.name},
        "FOREIGN_IMPLEMENTATION": {"implementation": others[0], "belongs": other.name, "experiment": main},
        "MODEL_MISMATCH": {"model": others[1]},
        "OTHER_EXPERIMENT": {"experiment": main, "found": [other.name]},
        "OTHER_EXPERIMENTS": {"experiment_a": main, "experiment_b": other.name},
        "REPORT_NEEDS_MAIN": {"experiment": main},
        # the first setting the main experiment refuses, and its own reason
        "REFUSED_BY_EXPERIMENT": {"option": settings.get(refused).option, "reason": reason},
        "SELECT_LIMIT": {
            "name": limited[0].name,
            "limit": limited[0].max_connections,
            "fd_setsize": f"{FD_SETSIZE:,}",
        },
        # an io_uring sender: its name is its kind of submission ("uring_...")
        "URING_UNAVAILABLE": {"name": next(name for name in implementations.names() if name.startswith("uring_"))},
        # the first buffer the sweep checks, on a host whose two caps are alike (Debian's default: 212992 bytes)
        "SOCKET_BUFFER_CAPPED": {
            "buffer": first,
            "sysctl": socket_buffer.CAPS[first].removeprefix("/proc/sys/").replace("/", "."),
        },
        "TOO_FEW_DESCRIPTORS": {
            "needed": most + config.DESCRIPTORS_BESIDES_CONNECTIONS,
            "besides": config.DESCRIPTORS_BESIDES_CONNECTIONS,
        },
        "NOT_ENOUGH_MEMORY": {"needed": config.memory_needed(asking) >> 20},
        "SOCKET_BUFFER_TOO_SMALL": {"smallest": SMALLEST_SOCKET_BUFFER},
        "TOO_FEW_MAX_TRIALS": {"least": config.ADAPTIVE_MIN_TRIALS},
        # a sweep started by the copylab before this one
        "RESUME_OTHER_SCHEMA": {"found": SCHEMA_VERSION - 1, "schema": SCHEMA_VERSION},
        "SCHEMA_LACKS": {"schema": SCHEMA_VERSION},
    }


def sample_line(name: str, entry: error_catalogue.Entry) -> str:
    """ENTRY as a user sees it, filled in with its sample."""
    values = {**entry.sample, **derived_samples().get(name, {})}
    text = entry.text(**values)
    return f"copylab: error: {text}" if entry.kind == "error" else text


def _explained(name: str, entry: error_catalogue.Entry) -> str:
    values = {**entry.sample, **derived_samples().get(name, {})}
    return (
        f"```text\n{sample_line(name, entry)}\n```\n\n"
        f"**Cause.** {entry.cause.format(**values)} **Do.** {entry.do.format(**values)}\n"
    )


def page() -> str:
    by_section: dict[str, list[str]] = {section: [] for section in error_catalogue.SECTIONS}
    for name, entry in error_catalogue.entries().items():
        by_section[entry.section].append(_explained(name, entry))
    parts = [INTRODUCTION]
    for section, explained in by_section.items():
        if explained:
            parts.append(f"## {section}\n\n" + "\n".join(explained))
    parts.append(REPORTING)
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(page())
