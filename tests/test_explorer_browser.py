"""The explorer in a real browser: Debian's Chromium, driven through playwright, on the notebook in JupyterLab
(as `./inv lab` starts it) and on the app Voilà serves (`copylab explore`, started as the user starts it).

One JupyterLab, one Voilà and one browser serve the whole module; every process they start is gone at its end.
Screenshots land in test-artifacts/ for a human look.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import select
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

from copylab.explore import serve
from copylab.paths import ROOT
from tests.chromium import CHROMIUM, CHROMIUM_ARGS, needs_chromium
from tests.synthetic import make_trials, write_sweep

ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1500, "height": 1600}  # the width at which the first row of menus used to overflow
NEWS_PROMPT = "official Jupyter news"
MARKER = "COPYLAB_TEST_SERVER"

pytestmark = needs_chromium
playwright = pytest.importorskip("playwright.sync_api")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, process: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the server is not ready after {timeout} s: {log.read_text()[-2000:]}")


def _processes_with(marker: str) -> list[int]:
    """Processes whose environment says MARKER: a server of this module and every process it started."""
    needle, found = f"{MARKER}={marker}\0".encode(), []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _stop(process: subprocess.Popen, marker: str) -> list[int]:
    """Ends the server's process group, gracefully first; returns what outlived it (killed now)."""
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
            process.wait(grace)
            break
        except ProcessLookupError:
            break
        except subprocess.TimeoutExpired:
            continue
    deadline = time.monotonic() + 10  # kernels end a moment after their server
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.3)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


@dataclass
class Server:
    url: str
    token: str
    process: subprocess.Popen
    marker: str  # in the environment of the server and its kernels

    def api(self, path: str, method: str = "GET") -> Any:
        base = self.url.split("/lab/")[0].split("/?")[0]
        request = urllib.request.Request(
            f"{base}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_for_idle_kernel(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(s["kernel"]["execution_state"] == "idle" for s in self.api("sessions") if s.get("kernel")):
                return
            time.sleep(0.5)
        raise RuntimeError(f"no idle kernel after {timeout} s")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a directory name of this module's own: it marks the servers' and kernels' environments
    directory = tmp_path_factory.mktemp("explorer-browser") / f"sweep-{secrets.token_hex(6)}"
    return write_sweep(directory, make_trials(seed=4))


def _private_jupyter(directory: Path, marker: str) -> dict[str, str]:
    """Jupyter's own files of a test server, away from the user's, and MARKER to find its processes by."""
    return {
        MARKER: marker,
        "JUPYTER_CONFIG_DIR": str(directory / "config"),
        "JUPYTER_RUNTIME_DIR": str(directory / "runtime"),
        "JUPYTER_DATA_DIR": str(directory / "data"),
        "IPYTHONDIR": str(directory / "ipython"),
    }


@pytest.fixture(scope="module")
def lab(sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """JupyterLab launched as `./inv lab` launches it, but on a scratch root holding a copy of the notebook, so
    that autosave never writes outputs into the committed one; no settings of the test's own."""
    scratch = tmp_path_factory.mktemp("lab")
    root = scratch / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(serve.NOTEBOOK, root / "notebooks")
    port, token = _free_port(), secrets.token_hex(16)
    marker = f"lab-{token}"
    env = dict(serve.environment(sweep), **_private_jupyter(scratch, marker))
    command = serve.lab_command(port, token, root)
    command += [f"--LabApp.workspaces_dir={scratch / 'workspaces'}", f"--LabApp.user_settings_dir={scratch / 'us'}"]
    log = scratch / "jupyterlab.log"
    with log.open("wb") as out:
        # its own session, so that the test can end the server with whatever it started
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(serve.lab_url(port, token, "notebooks/30_explore.ipynb"), token, process, marker)
    try:
        _wait_ready(f"http://127.0.0.1:{port}/api/status?token={token}", process, log)
        yield server
    finally:
        _shutdown_kernels(server)
        left = _stop(process, server.marker)
    assert not left, f"processes left behind by JupyterLab: {left}"


def _shutdown_kernels(server: Server) -> None:
    """Kernels run in sessions of their own: ask the server to end them before ending it."""
    try:
        for kernel in server.api("kernels"):
            server.api(f"kernels/{kernel['id']}", method="DELETE")
    except OSError:
        pass  # the server is gone already; its shutdown ends its kernels


def _url_line(process: subprocess.Popen, timeout: float) -> str:
    """The first line the command prints, within TIMEOUT seconds."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, f"no URL printed within {timeout} s"
    return process.stdout.readline()


@pytest.fixture(scope="module")
def app(sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`copylab explore --data SWEEP --port P`, started from a directory that is not the project's."""
    scratch = tmp_path_factory.mktemp("voila")
    port, marker = _free_port(), f"voila-{secrets.token_hex(8)}"
    log = scratch / "voila.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "copylab", "explore", "--data", str(sweep), "--port", str(port)],
            cwd=scratch,
            env=dict(os.environ, **_private_jupyter(scratch, marker)),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        line = _url_line(process, 60)
        match = re.fullmatch(rf"copylab explorer: (http://127\.0\.0\.1:{port}/\?token=([0-9a-f]+))\n", line)
        assert match, line
        server = Server(match[1], match[2], process, marker)
        with socket.socket() as probe:  # the URL comes once the server answers: a browser opened at it finds it
            assert probe.connect_ex(("127.0.0.1", port)) == 0, "the URL was printed before the server answered"
        yield server
    finally:
        left = _stop(process, marker)
    assert not left, f"processes left behind by Voilà: {left}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _page(browser: Any, errors: list[str]) -> Any:
    """A page at the width where the explorer used to overflow, whose console errors land in ERRORS."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(30_000)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page


def _control(page: Any, description: str) -> Any:
    """The widget whose description (ipywidgets' label before the control) is DESCRIPTION."""
    label = page.locator("label.widget-label", has_text=re.compile(f"^{re.escape(description)}$"))
    return page.locator(".widget-inline-hbox", has=label)


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


OVERFLOWS = """() => {
    const width = document.documentElement.clientWidth;
    const shown = (e) => e.getClientRects().length > 0;
    const found = [];
    for (const row of document.querySelectorAll('.copylab-explorer .widget-hbox')) {
        if (!shown(row)) continue;
        const box = row.getBoundingClientRect();
        if (box.right > width + 1 || row.scrollWidth > row.clientWidth + 1) found.push(`row ${row.innerText}`);
        for (const child of row.querySelectorAll(':scope > *, select, button, input')) {
            const r = child.getBoundingClientRect();
            if (shown(child) && (r.right > box.right + 1 || r.left < box.left - 1))
                found.push(`${child.className} (${Math.round(r.left)}-${Math.round(r.right)} px) outside its row `
                           + `(${Math.round(box.left)}-${Math.round(box.right)} px)`);
        }
    }
    return found;
}"""


def _check_first_view(page: Any, name: str) -> tuple[Any, str]:
    """The status, a plot and the menus shown, nothing overflowing its row; returns the image and its src."""
    summary = page.locator(".copylab-status .copylab-summary")
    summary.wait_for(timeout=60_000)
    image = page.locator(".copylab-plot img")
    image.wait_for()
    assert "throughput_gbps" in summary.inner_text() and "1 thread," in summary.inner_text()
    src = image.get_attribute("src")
    assert src.startswith("data:image/png")
    for menu in ("sweep", "workload", "metric", "pinning", "receive"):
        assert _control(page, menu).locator("select").is_visible(), menu
    page.screenshot(path=str(ARTIFACTS / f"{name}-1-loaded.png"))
    assert page.evaluate(OVERFLOWS) == []
    assert page.get_by_text(NEWS_PROMPT).count() == 0
    return image, src


def _change_metric(page: Any, image: Any, src: str, name: str) -> str:
    _control(page, "metric").locator("select").select_option(value="cpu_ns_per_byte (ns/B)")
    _wait_for_redraw(page, src, "cpu_ns_per_byte")
    tables = page.locator(".copylab-tables").inner_text()
    assert "cpu_ns_per_byte at 256 KiB, 1 thread, stream, pinning same_cpu" in tables
    page.screenshot(path=str(ARTIFACTS / f"{name}-2-metric.png"))
    assert page.evaluate(OVERFLOWS) == []
    return image.get_attribute("src")


@pytest.mark.timeout(150)
def test_explorer_app_shows_widgets_and_plots_without_code(app: Server, browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    page = _page(browser, errors)
    try:
        page.goto(app.url, timeout=90_000)  # a cold Voila kernel beside other tests
        image, src = _check_first_view(page, "explore")
        assert page.title() == "copylab explorer"
        assert page.locator(".cm-editor, .jp-InputPrompt, .jp-CodeMirrorEditor").count() == 0
        assert "Explorer.from_environment" not in page.content()
        _change_metric(page, image, src, "explore")
        _control(page, "metric").locator("select").select_option(value="throughput_gbps (Gbit/s)")
        page.locator(".copylab-status").wait_for()
        assert errors == []
    finally:
        page.close()


@pytest.mark.timeout(150)
def test_explorer_redraws_in_jupyterlab_quietly(lab: Server, browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    page = _page(browser, errors)
    try:
        page.goto(lab.url, timeout=90_000)
        page.locator(".jp-Notebook").wait_for()
        lab.wait_for_idle_kernel()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        page.locator(".copylab-status .copylab-summary").wait_for(timeout=60_000)
        page.locator(".copylab-explorer").scroll_into_view_if_needed()
        image, src = _check_first_view(page, "lab")
        second_src = _change_metric(page, image, src, "lab")

        handle = _control(page, "threads").locator(".noUi-handle")
        handle.focus()
        handle.press("ArrowRight")
        _wait_for_redraw(page, second_src, "2 threads")
        tables = page.locator(".copylab-tables").inner_text()
        assert "cpu_ns_per_byte at 256 KiB, 1 thread" not in tables
        assert "cpu_ns_per_byte at 256 KiB, 2 threads, stream, pinning same_cpu" in tables
        page.screenshot(path=str(ARTIFACTS / "lab-3-slider.png"))
        assert page.get_by_text(NEWS_PROMPT).count() == 0
        assert errors == []
    finally:
        page.close()
