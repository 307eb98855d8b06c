"""Executes a parameterised notebook with papermill; a failure becomes one line naming the cell."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import papermill
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from papermill.exceptions import PapermillExecutionError
from traitlets import Unicode
from traitlets.config import Config

from copylab.error_catalogue import NOTEBOOK_FAILED, NOTEBOOK_UNFINISHED
from copylab.scratch import private_directory

KERNEL = "python3"
# papermill waits for a cell forever unless told otherwise: past this, a cell (or a kernel that stopped answering)
# fails the notebook with NOTEBOOK_UNFINISHED.  The longest cells, the analysis of a bench's 100,000 rows and the
# report's figures, take well under a minute.
CELL_TIMEOUT_S = 600.0


class LoggedKernelManager(AsyncKernelManager):
    """A kernel whose own stderr (ipykernel's log) goes to a file rather than the console.

    jupyter_client interrupts the kernel when it stops it, and ipykernel logs that as
    "ERROR | KeyboardInterrupt caught in kernel" on every run; the file is shown only when the notebook fails."""

    stderr_path = Unicode("", help="where the kernel's stderr goes; empty: the console").tag(config=True)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if not self.stderr_path:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        with open(self.stderr_path, "ab") as log:  # the child keeps its own descriptor
            return await super()._async_launch_kernel(kernel_cmd, **kw, stderr=log)


def _show(log: Path) -> None:
    """The kernel's stderr, on the console, after a failure."""
    text = log.read_text(errors="replace").strip() if log.is_file() else ""
    if text:
        print(f"kernel log:\n{text}", file=sys.stderr)


def execute(
    notebook: Path,
    output: Path,
    parameters: dict[str, Any],
    cwd: Path,
    label: str,
    cell_timeout_s: float = CELL_TIMEOUT_S,
) -> None:
    """Run notebook into output, each cell for at most CELL_TIMEOUT_S; label ("analysis", "report") names it in the
    error."""
    # An IPC socket instead of TCP ports on localhost: nothing else on the host can reach the kernel
    # (and ipykernel stops warning about unencrypted TCP in every task's output).
    # Configured rather than passed as a ready kernel manager, so that nbclient still owns and stops the kernel.
    # The sockets and the kernel's log go to a private directory of this run: two notebooks at once never share them.
    with private_directory("copylab-kernel-") as sockets:
        log = sockets / "kernel-stderr.log"
        kernel_config = Config(
            {
                "NotebookClient": {"kernel_manager_class": LoggedKernelManager},
                # The connection file too, which would otherwise be a temporary file that a Ctrl-C at the wrong
                # moment leaves behind.
                "KernelManager": {
                    "transport": "ipc",
                    "ip": str(sockets / "kernel"),
                    "connection_file": str(sockets / "kernel.json"),
                },
                "LoggedKernelManager": {"stderr_path": str(log)},
            }
        )
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=parameters,
                kernel_name=KERNEL,
                cwd=str(cwd),
                progress_bar=False,
                execution_timeout=cell_timeout_s,
                config=kernel_config,
            )
        except PapermillExecutionError as error:
            lines = str(error.evalue or "").strip().splitlines()
            raise NOTEBOOK_FAILED.error(
                label=label,
                cell=error.exec_count,
                error=error.ename,
                message=lines[0] if lines else "no message",
                output=output,
            ) from None
        except (CellTimeoutError, DeadKernelError) as error:
            _show(log)
            raise NOTEBOOK_UNFINISHED.error(label=label, error=type(error).__name__, output=output) from None
