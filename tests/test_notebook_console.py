"""Executing a notebook leaves the console quiet: ipykernel's log goes to a file, shown only when the kernel dies."""

from __future__ import annotations

import time

import nbformat
import pytest

from copylab.analysis.notebooks import execute
from copylab.errors import CopylabError


def _notebook(path, source: str):
    """A notebook of a parameters cell and one cell of SOURCE, at PATH."""
    parameters = nbformat.v4.new_code_cell("x = None", metadata={"tags": ["parameters"]})
    nb = nbformat.v4.new_notebook(cells=[parameters, nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_notebook_run_prints_no_kernel_log(tmp_path, capfd):
    """jupyter_client interrupts the kernel when it stops it, and ipykernel may log that as an ERROR on the kernel
    process's stderr, depending on when the interrupt lands; here the cell writes to that stderr itself."""
    notebook = _notebook(
        tmp_path / "n.ipynb", 'import os\nos.write(2, b"[IPKernelApp] ERROR | KeyboardInterrupt caught\\n")'
    )
    execute(notebook, tmp_path / "out.ipynb", {"x": 1}, tmp_path, "test")
    captured = capfd.readouterr()
    assert "ERROR" not in captured.err and "KeyboardInterrupt" not in captured.err, captured.err
    assert (tmp_path / "out.ipynb").is_file()


def test_a_cell_that_never_ends_fails_the_notebook_in_one_line_instead_of_hanging(tmp_path):
    notebook = _notebook(tmp_path / "stuck.ipynb", "import time\ntime.sleep(600)")
    started = time.monotonic()
    with pytest.raises(CopylabError, match=r"test notebook did not finish \(CellTimeoutError; see "):
        execute(notebook, tmp_path / "out.ipynb", {"x": 1}, tmp_path, "test", cell_timeout_s=2)
    assert time.monotonic() - started < 60
