"""The command line: `python -m copylab TASK [OPTIONS]` and the `copylab` script.

Every task turns bad input into one line on stderr and exit status 2, and an interruption (Ctrl-C or SIGTERM)
into one line and exit status 130 after its clean-up has run.
"""

from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from copylab import installed_version
from copylab.cli import measuring
from copylab.cli.commands import COMMANDS, REQUIRED, Command
from copylab.cli.parsing import with_default
from copylab.errors import CopylabError
from copylab.record.origin import ModifiedData

INTERRUPTED = 130  # the shell's status for a process ended by SIGINT
BAD_INPUT = 2

_PYTHON_SHOWWARNING = warnings.showwarning


def _one_line_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """copylab's own warnings (data used although modified) in one line, like its errors."""
    if issubclass(category, ModifiedData):
        print(f"copylab: warning: {message}", file=sys.stderr)
    else:
        _PYTHON_SHOWWARNING(message, category, *args, **kwargs)


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def guarded(call: Callable[[], int]) -> int:
    """CALL's exit status; bad input and unusable environments end in one line and status 2, never a traceback."""
    # SIGTERM ends a task like Ctrl-C, so every clean-up (namespaces, notebook kernels, temporary files) runs;
    # and Ctrl-C interrupts even where the task was started with SIGINT ignored (a background job).
    previous = signal.signal(signal.SIGTERM, _terminated)
    previous_interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning
            return call()
    except CopylabError as error:
        print(f"copylab: error: {error}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("copylab: interrupted; everything measured so far is saved", file=sys.stderr)
        return INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_interrupt)


def _escaped(text: str) -> str:
    """TEXT as argparse prints it: its % signs are format characters."""
    return text.replace("%", "%%")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_command(commands: Any, command: Command) -> None:
    parser = commands.add_parser(command.name, help=_escaped(command.headline), description=_escaped(command.summary))
    for option in command.options:
        default = None if option.default is REQUIRED else option.default
        help = _escaped(with_default(command.name, option.name, default, option.help))
        if option.default is REQUIRED:
            parser.add_argument(option.name, help=_escaped(option.help))
        elif isinstance(option.default, bool):
            parser.add_argument(
                _flag(option.name), action=argparse.BooleanOptionalAction, default=option.default, help=help
            )
        else:
            parser.add_argument(_flag(option.name), dest=option.name, default=option.default, help=help)
    parser.set_defaults(command=command)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="copylab",
        description="Measure what data movement costs in Linux TCP I/O: sweeps, analysis, report.",
        epilog="Each task's options: copylab TASK --help.  ./inv TASK runs the same tasks after preparing the "
        "environment.",
    )
    top.add_argument("--version", action="version", version=f"copylab {installed_version()}")
    commands = top.add_subparsers(title="tasks", metavar="TASK", required=True)
    for command in COMMANDS:
        _add_command(commands, command)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    passed_on: list[str] = []
    if "--" in arguments:
        at = arguments.index("--")
        arguments, passed_on = arguments[:at], arguments[at + 1 :]
    namespace = vars(parser().parse_args(arguments))
    command: Command = namespace.pop("command")
    if command.passes_on:
        namespace["passed_on"] = passed_on
    elif passed_on:
        print(f"copylab: error: {command.name} takes no arguments after --", file=sys.stderr)
        return BAD_INPUT
    return guarded(lambda: measuring.run(command, namespace))
