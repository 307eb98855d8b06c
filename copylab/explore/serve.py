"""Serving the explorer on localhost: its notebook in JupyterLab (`lab`) or, code hidden, as Voilà's app (`explore`).

Both start quiet, through Jupyter directories of copylab's own (jupyter/ here) that the server's environment
adds to the search paths, for this server alone; the user's own configuration and settings stay untouched
and still win:

- jupyter/config (JUPYTER_CONFIG_PATH): labconfig/default_setting_overrides.json answers JupyterLab's
  question "get notified about official Jupyter news?" with "never" (fetchNews "false"; the default "none"
  asks, in a toast over the page);
- jupyter/data (JUPYTER_PATH): the Voilà template "copylab", Voilà's lab template without its style sheets
  from a CDN, which on a closed network fail with an error in the page's console.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

from copylab import error_catalogue
from copylab.error_catalogue import EXPLORER_EXITED, EXPLORER_SILENT, NO_DATA_DIRECTORY
from copylab.paths import NOTEBOOKS
from copylab.record.store import SweepStore

NOTEBOOK = NOTEBOOKS / "30_explore.ipynb"
ENV_VAR = "COPYLAB_EXPLORE_DATA"  # the sweep the explorer opens with
JUPYTER = Path(__file__).resolve().parent / "jupyter"
VOILA_TEMPLATE = "copylab"
LOCALHOST = "127.0.0.1"
# How long a server may take to answer: JupyterLab, started cold on a slow machine, takes tens of seconds.
ANSWER_S = 120.0


def check_sweep(data: str | Path) -> Path:
    """DATA resolved, once it is known to be a sweep directory (trials.csv and a readable manifest.json)."""
    store = SweepStore(Path(data).resolve())
    if not store.directory.is_dir():
        raise NO_DATA_DIRECTORY.error(directory=store.directory)
    if not store.trials_path.is_file():
        raise error_catalogue.NOT_A_SWEEP.error(directory=f"--data: {store.directory}", missing="trials.csv")
    store.read_manifest()  # a one-line error when it is missing or unreadable
    return store.directory


def _prepended(directory: Path, variable: str) -> str:
    return os.pathsep.join(p for p in (str(directory), os.environ.get(variable, "")) if p)


def environment(sweep: Path) -> dict[str, str]:
    """The server's environment: the sweep for the explorer's kernel, copylab's Jupyter directories first."""
    return dict(
        os.environ,
        **{
            ENV_VAR: str(sweep),
            "JUPYTER_CONFIG_PATH": _prepended(JUPYTER / "config", "JUPYTER_CONFIG_PATH"),
            "JUPYTER_PATH": _prepended(JUPYTER / "data", "JUPYTER_PATH"),
        },
    )


def lab_command(port: int, token: str, root: Path) -> list[str]:
    """JupyterLab on localhost serving ROOT, with TOKEN (so the printed URL opens a notebook, not a login)."""
    return [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--ip={LOCALHOST}",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        "--LabApp.news_url=None",
        "--allow-root",
    ]


def lab_url(port: int, token: str, notebook: str) -> str:
    return f"http://{LOCALHOST}:{port}/lab/tree/{notebook}?token={token}"


def voila_command(port: int, token: str, notebook: Path = NOTEBOOK) -> list[str]:
    """Voilà on localhost rendering NOTEBOOK as an app: its widgets and outputs, never its code."""
    return [
        sys.executable,
        "-m",
        "voila",
        str(notebook),
        "--no-browser",
        f"--Voila.ip={LOCALHOST}",
        f"--port={port}",
        "--Voila.port_retries=0",
        f"--token={token}",
        f"--template={VOILA_TEMPLATE}",
        "--strip_sources=True",
        "--show_tracebacks=False",
    ]


def voila_url(port: int, token: str) -> str:
    return f"http://{LOCALHOST}:{port}/?token={token}"


def _answers(port: int) -> bool:
    """Whether an HTTP server answers on localhost's PORT (any status: a page asked for without its token is
    refused, yet the server is up; a page itself is never asked for, as Voilà would run the notebook for it)."""
    connection = http.client.HTTPConnection(LOCALHOST, port, timeout=2)
    try:
        connection.request("HEAD", "/api/status")
        connection.getresponse()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def _stop(server: subprocess.Popen[bytes], grace: float) -> None:
    """Asks the server to stop with SIGTERM, on which it shuts its kernels down (they run in sessions of their
    own); kills it only after GRACE seconds."""
    server.terminate()
    try:
        server.wait(grace)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def serve(
    command: list[str],
    environment: dict[str, str],
    cwd: Path,
    port: int,
    url: str,
    grace: float = 15,
    answer_s: float = ANSWER_S,
) -> int:
    """Run a server, print URL once it answers on PORT (a browser opened at the URL at once finds it), and wait until it
    ends, or until Ctrl-C or SIGTERM, the usual way to stop it.  A server that exits before it answers, or does not
    answer within ANSWER_S seconds, is a one-line error."""
    server = subprocess.Popen(command, cwd=cwd, env=environment)
    try:
        deadline = time.monotonic() + answer_s
        while not _answers(port):
            if server.poll() is not None:
                raise EXPLORER_EXITED.error(status=server.returncode, port=port)
            if time.monotonic() > deadline:
                _stop(server, grace)
                raise EXPLORER_SILENT.error(port=port, seconds=f"{answer_s:g}")
            time.sleep(0.1)
        print(f"copylab explorer: {url}", flush=True)
        return server.wait()
    except KeyboardInterrupt:
        _stop(server, grace)
        print("copylab: explorer stopped", file=sys.stderr)
        return 0
