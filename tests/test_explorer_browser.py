"""The explorer notebook in a real JupyterLab, driven by Debian's Chromium through playwright.

Screenshots land in test-artifacts/ for a human look.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copylab.explore.explorer import ENV_VAR
from copylab.paths import ROOT
from tests.synthetic import make_trials, write_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "doNotDisturbMode": True},
}

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")
playwright = pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, process: subprocess.Popen, log: Path, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"JupyterLab not ready after {timeout} s: {log.read_text()[-2000:]}")


@dataclass(frozen=True)
class Lab:
    base: str
    token: str

    @property
    def notebook_url(self) -> str:
        return f"{self.base}/lab/tree/notebooks/30_explore.ipynb?token={self.token}"

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(
            f"{self.base}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_for_idle_kernel(self, timeout: float = 40) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(s["kernel"]["execution_state"] == "idle" for s in self.api("sessions") if s.get("kernel")):
                return
            time.sleep(0.5)
        raise RuntimeError(f"no idle kernel after {timeout} s")


def _write_settings(directory: Path) -> None:
    """Start the notebook's kernel without asking, and no news toast over the page."""
    for plugin, values in SETTINGS.items():
        path = directory / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A JupyterLab on a free localhost port serving a copy of the notebook.

    The root is a scratch directory (a copy of the notebook; its "copylab" kernel imports the installed
    package) so that autosave never writes outputs into the committed notebook.
    """
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "30_explore.ipynb", root / "notebooks")
    sweep = write_sweep(tmp_path / "data" / "synthetic", make_trials(seed=4))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        **{ENV_VAR: str(sweep)},
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--allow-root",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    _write_settings(tmp_path / "settings")
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as out:
        # its own session, so the server and the kernels it starts end together
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = Lab(f"http://127.0.0.1:{port}", token)
    try:
        _wait_ready(f"{lab.base}/api/status?token={token}", process, log)
        yield lab
    finally:
        _shutdown_kernels(lab)
        _stop(process)


def _shutdown_kernels(lab: Lab) -> None:
    """Kernels run in sessions of their own: ask the server to end them before ending it."""
    try:
        for kernel in lab.api("kernels"):
            lab.api(f"kernels/{kernel['id']}", method="DELETE")
    except OSError:
        pass  # the server is gone already; its shutdown ends its kernels


def _stop(process: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            os.killpg(process.pid, signal.SIGKILL)  # kernels left behind by the server
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def _wait_for_redraw(page: Any, old_src: str, text: str) -> None:
    """Until the status mentions TEXT and the plot image differs from OLD_SRC."""
    page.wait_for_function(
        """([oldSrc, text]) => {
            const status = document.querySelector('.copylab-status .copylab-summary');
            const image = document.querySelector('.copylab-plot img');
            return status && image && status.innerText.includes(text) && image.src !== oldSrc;
        }""",
        arg=[old_src, text],
    )


@pytest.mark.timeout(90)
def test_explorer_redraws_in_jupyterlab(lab: Lab) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.set_default_timeout(30_000)
            page.goto(lab.notebook_url)
            page.locator(".jp-Notebook").wait_for()
            lab.wait_for_idle_kernel()

            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            summary = page.locator(".copylab-status .copylab-summary")
            summary.wait_for(timeout=45_000)
            image = page.locator(".copylab-plot img")
            image.wait_for()
            first_text, first_src = summary.inner_text(), image.get_attribute("src")
            assert "throughput_gbps" in first_text and "1 thread," in first_text
            assert first_src.startswith("data:image/png")
            page.locator(".copylab-status").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "explorer-1-loaded.png"))

            page.locator(".copylab-metric select").select_option(value="cpu_ns_per_byte (ns/B)")
            _wait_for_redraw(page, first_src, "cpu_ns_per_byte")
            second_src = image.get_attribute("src")
            tables = page.locator(".copylab-tables").inner_text()
            assert "cpu_ns_per_byte at 256 KiB, 1 thread, stream, pinning same_cpu" in tables
            page.screenshot(path=str(ARTIFACTS / "explorer-2-metric.png"))

            handle = page.locator(".copylab-fixed .noUi-handle")
            handle.focus()
            handle.press("ArrowRight")
            _wait_for_redraw(page, second_src, "2 threads")
            tables = page.locator(".copylab-tables").inner_text()
            assert "cpu_ns_per_byte at 256 KiB, 2 threads, stream, pinning same_cpu" in tables
            page.screenshot(path=str(ARTIFACTS / "explorer-3-slider.png"))
        finally:
            browser.close()
