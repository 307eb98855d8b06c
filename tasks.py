"""copylab's tasks for invoke (run them through ./inv, which prepares the environment first).

Each task is a command of copylab.cli.commands with the same options as `python -m copylab TASK`; this module
only hands them to invoke.  Every task turns a CopylabError into one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from inspect import Parameter, Signature
from typing import Any

from invoke import Collection, Exit, Task

from copylab.cli import measuring
from copylab.cli.commands import COMMANDS, REQUIRED, Command
from copylab.cli.main import guarded
from copylab.cli.parsing import with_default


def _task(command: Command) -> Task:
    """COMMAND as an invoke task: its options as keyword parameters, its failures as an exit status."""

    def body(c: Any, **options: Any) -> None:
        if command.passes_on:
            options["passed_on"] = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
        status = guarded(lambda: measuring.run(command, options))
        if status:
            raise Exit(code=status)

    body.__name__ = command.name.replace("-", "_")
    body.__doc__ = command.summary
    parameters = [
        Parameter(option.name, Parameter.POSITIONAL_OR_KEYWORD)
        if option.default is REQUIRED
        else Parameter(option.name, Parameter.KEYWORD_ONLY, default=option.default)
        for option in command.options
    ]
    body.__signature__ = Signature([Parameter("c", Parameter.POSITIONAL_OR_KEYWORD), *parameters])  # type: ignore[attr-defined]
    helps = {
        option.name: with_default(
            command.name, option.name, None if option.default is REQUIRED else option.default, option.help
        )
        for option in command.options
    }
    # Long options only: short ones would be handed out by the order of the options, and move when they grow.
    return Task(body, name=command.name, help=helps, auto_shortflags=command.name != "run-sweep")


namespace = Collection(*(_task(command) for command in COMMANDS))
# the tests and the structure checks reach run-sweep's task by its module attribute
run_sweep = namespace.tasks["run-sweep"]
