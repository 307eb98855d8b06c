"""Executes a parameterised notebook with papermill; a failure becomes one line naming the cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import papermill
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from papermill.exceptions import PapermillExecutionError
from traitlets.config import Config

from copylab.errors import CopylabError
from copylab.scratch import private_directory

KERNEL = "python3"


def execute(notebook: Path, output: Path, parameters: dict[str, Any], cwd: Path, label: str) -> None:
    """Run notebook into output; label ("analysis", "report") names it in the error."""
    # An IPC socket instead of TCP ports on localhost: nothing else on the host can reach the kernel
    # (and ipykernel stops warning about unencrypted TCP in every task's output).
    # Configured rather than passed as a ready kernel manager, so that nbclient still owns and stops the kernel.
    # The sockets go to a private directory of this run: two notebooks at once never share them.
    with private_directory("copylab-kernel-") as sockets:
        kernel_config = Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}})
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=parameters,
                kernel_name=KERNEL,
                cwd=str(cwd),
                progress_bar=False,
                config=kernel_config,
            )
        except PapermillExecutionError as error:
            lines = str(error.evalue or "").strip().splitlines()
            raise CopylabError(
                f"{label} notebook failed in cell {error.exec_count}: {error.ename}: "
                f"{lines[0] if lines else 'no message'} (see {output})"
            ) from None
        except (CellTimeoutError, DeadKernelError) as error:
            raise CopylabError(f"{label} notebook did not finish ({type(error).__name__}; see {output})") from None
