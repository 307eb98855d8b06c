"""Executing a notebook leaves the console quiet: ipykernel's log goes to a file, shown only when the kernel dies."""

from __future__ import annotations

import nbformat

from copylab.analysis.notebooks import execute


def test_a_notebook_run_prints_no_kernel_log(tmp_path, capfd):
    """jupyter_client interrupts the kernel when it stops it, and ipykernel may log that as an ERROR on the kernel
    process's stderr, depending on when the interrupt lands; here the cell writes to that stderr itself."""
    notebook = tmp_path / "n.ipynb"
    cell = nbformat.v4.new_code_cell('import os\nos.write(2, b"[IPKernelApp] ERROR | KeyboardInterrupt caught\\n")')
    parameters = nbformat.v4.new_code_cell("x = None", metadata={"tags": ["parameters"]})
    nb = nbformat.v4.new_notebook(cells=[parameters, cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, notebook)
    execute(notebook, tmp_path / "out.ipynb", {"x": 1}, tmp_path, "test")
    captured = capfd.readouterr()
    assert "ERROR" not in captured.err and "KeyboardInterrupt" not in captured.err, captured.err
    assert (tmp_path / "out.ipynb").is_file()
