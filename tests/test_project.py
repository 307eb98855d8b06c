"""The project's own promises: pinned environments that agree, clean notebooks, a README that tells the truth."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from copylab.paths import NOTEBOOKS, REFERENCE_MMAP_DATA, ROOT

VENV_BIN = Path(sys.executable).parent
# A notebook here takes seconds and its longest cell a few: these bounds only turn a hang into a failure.
CELL_TIMEOUT_S = 90
NOTEBOOK_TIMEOUT_S = 180


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def environment_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.fullmatch(r"\s+- ([A-Za-z0-9_.-]+)\s*==?\s*([0-9][^\s#]*)\s*(#.*)?", line)
        if match and match.group(1) != "python":
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_requirements_and_environment_name_the_same_pinned_packages():
    requirements, environment = requirement_pins(), environment_pins()
    assert requirements, "requirements.txt pins nothing"
    assert requirements == environment


def test_every_requirement_is_pinned():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        assert not line or "==" in line, f"unpinned: {line}"


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    assert all(
        not cell.get("outputs") and cell.get("execution_count") is None for cell in cells if cell["cell_type"] == "code"
    )


README_MAX_LINES = 200
# Pages other engineers generate or write; a link to one may dangle until it lands, and is checked once it exists.
PENDING_PAGES = frozenset(
    {
        "docs/architecture.md",
        "docs/reference/options.md",
        "docs/reference/columns.md",
        "docs/reference/manifest.md",
        "docs/reference/programs.md",
    }
)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def documentation() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of PAGE's headings: lower case, punctuation but hyphens and underscores dropped, spaces to
    hyphens."""
    found = set()
    for line in page.read_text().splitlines():
        if match := re.fullmatch(r"#{1,6} (.+)", line):
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def test_readme_is_short_and_opens_with_both_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    opening = "\n".join(lines[:40])
    assert "./inv report" in opening and "./inv test" in opening


@pytest.mark.parametrize("page", documentation(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_documentation_link_resolves(page):
    for target in MARKDOWN_LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # a web address
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        relative = resolved.relative_to(ROOT).as_posix()
        if relative in PENDING_PAGES and not resolved.exists():
            continue
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(resolved), f"{page.name}: {target}: no such heading"


def test_readme_links_every_documentation_page():
    readme = (ROOT / "README.md").read_text()
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")} | PENDING_PAGES
    for page in sorted(pages):
        assert f"]({page})" in readme, f"README.md does not link {page}"


def test_documented_debian_packages_are_what_inv_installs():
    script = (ROOT / "inv").read_text()
    array = re.search(r"^DEBIAN_PACKAGES=\((.*?)^\)", script, re.S | re.M).group(1)
    installed = {word for line in array.splitlines() for word in line.split("#")[0].split()}
    section = (ROOT / "docs" / "testbeds.md").read_text().split("## Debian packages", 1)[1].split("\n## ", 1)[0]
    documented = {
        cell
        for row in section.splitlines()
        if row.startswith("| `")
        for cell in re.findall(r"`([^`]+)`", re.split(r"(?<!\\)\|", row)[1])
    }
    assert installed and documented == installed


def test_documented_tasks_are_invokes():
    """docs/sweeps.md's tasks table names every task tasks.py defines, and no other."""
    from invoke import Collection

    spec = importlib.util.spec_from_file_location("copylab_tasks_for_docs", ROOT / "tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    defined = set(Collection.from_module(module).task_names)
    table = (ROOT / "docs" / "sweeps.md").read_text().split("## Tasks", 1)[1].split("\n## ", 1)[0]
    documented = {
        word
        for row in table.splitlines()
        if row.startswith("| `")
        for word in re.findall(r"`([a-z-]+)(?: [^`]*)?`", re.split(r"(?<!\\)\|", row)[1])
    }
    assert documented == defined


def test_readme_lists_the_questions_the_report_answers():
    from copylab.report.experiments.copies.answers import QUESTIONS

    readme = (ROOT / "README.md").read_text()
    for number, question in enumerate(QUESTIONS, 1):
        assert f"{number}. {question}" in readme, question


def test_ci_runs_exactly_the_readme_test_command():
    lines = [
        line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    assert lines[-1].strip() in ("./inv test", "exec ./inv test")


def test_inv_is_idempotent_and_cheap_when_prepared():
    """A prepared ./inv installs nothing and costs little beside invoke itself (ratios in one run, medians)."""
    invoke = [str(Path(sys.executable).parent / "invoke"), "--list"]
    subprocess.run([str(ROOT / "inv"), "--list"], check=True, capture_output=True)
    ratios = []
    for _ in range(5):
        started = time.monotonic()
        result = subprocess.run([str(ROOT / "inv"), "--list"], capture_output=True, text=True)
        wrapped = time.monotonic() - started
        assert result.returncode == 0 and "run-sweep" in result.stdout
        assert result.stderr == ""  # nothing installed, nothing prepared
        started = time.monotonic()
        subprocess.run(invoke, check=True, capture_output=True)
        ratios.append(wrapped / (time.monotonic() - started))
    # The checks cost about as much as invoke's own start-up; a reinstall would cost dozens of times more.
    assert statistics.median(ratios) < 10


def test_copylab_imports_and_papermill_runs_every_notebook_from_elsewhere(tmp_path):
    """The package is installed: nothing depends on the working directory being the project root."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = subprocess.run(
        [sys.executable, "-c", "import copylab.report.render, copylab.explore.explorer; print(copylab.__file__)"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(imported.stdout.strip()).parent == ROOT / "copylab"
    data = tmp_path / "data" / "reference"
    data.mkdir(parents=True)
    # the smallest reference (a copies sweep of 40 trials): the test is about where the notebooks run from
    for name in ("trials.csv", "manifest.json"):
        shutil.copy(REFERENCE_MMAP_DATA / name, data / name)
    figures = tmp_path / "figures"
    runs = {
        "10_analyze_sweep": ["-p", "data_dir", str(data), "-p", "figures_root", str(figures)],
        "20_report": ["-y", json.dumps({"data_dirs": [str(data)], "figures_root": str(figures)})],
        "30_explore": [],
    }
    # The kernels' connection files and IPython's history database of this test alone, not those of every kernel
    # that another test starts beside it.
    environment = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"))
    # papermill waits for a cell, and for the kernel's last reply, forever unless told otherwise: a kernel that
    # stops answering fails its cell after CELL_TIMEOUT_S, and anything else that hangs ends the run after
    # NOTEBOOK_TIMEOUT_S, well within pytest's own timeout (a notebook takes seconds).
    bounds = ["--start-timeout", "60", "--execution-timeout", str(CELL_TIMEOUT_S)]
    for notebook, parameters in runs.items():  # in this order: the report reads what the analysis wrote
        output = elsewhere / f"{notebook}.out.ipynb"
        try:
            result = subprocess.run(
                [str(VENV_BIN / "papermill"), str(NOTEBOOKS / f"{notebook}.ipynb"), str(output), *bounds, *parameters],
                cwd=elsewhere,
                env=environment,
                capture_output=True,
                text=True,
                timeout=NOTEBOOK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as hung:
            said = (hung.stderr or b"").decode(errors="replace")  # bytes, even with text=True
            raise AssertionError(
                f"{notebook}: papermill still running after {NOTEBOOK_TIMEOUT_S} s: {said[-1500:]}"
            ) from None
        assert result.returncode == 0, f"{notebook}: {result.stderr[-1500:]}"
        executed = nbformat.read(output, as_version=4)
        assert executed.metadata.kernelspec.name == "copylab"
        assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert (figures / "reference" / "throughput_vs_size.png").is_file() and (data / "crossovers.csv").is_file()


def test_bare_pytest_collects_the_suite_from_the_root():
    result = subprocess.run(
        [str(VENV_BIN / "pytest"), "--collect-only", "-q", "tests/test_project.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-1500:]
    assert "test_bare_pytest_collects_the_suite_from_the_root" in result.stdout


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run([str(VENV_BIN / "ruff"), *command, "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_inv_lab_prints_the_url_of_the_explorer_notebook(tmp_path):
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    process = subprocess.Popen(
        [sys.executable, "-m", "invoke", "lab", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        line = process.stdout.readline()
        match = re.fullmatch(
            rf"copylab explorer: (http://127\.0\.0\.1:{port}/lab/tree/notebooks/30_explore\.ipynb"
            r"\?token=([0-9a-f]+))\n",
            line,
        )
        assert match, line
        url, token = match.groups()
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as page:
                    assert page.status == 200 and "JupyterLab" in page.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "JupyterLab did not come up"
                time.sleep(0.3)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/contents/notebooks/30_explore.ipynb?content=0",
            headers={"Authorization": f"token {token}"},
        )
        with urllib.request.urlopen(request, timeout=5) as contents:
            assert json.loads(contents.read())["type"] == "notebook"
        # no "get notified about official Jupyter news?" toast: copylab's default answers it with "never"
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification",
            headers={"Authorization": f"token {token}"},
        )
        with urllib.request.urlopen(request, timeout=5) as settings:
            assert json.loads(settings.read())["schema"]["properties"]["fetchNews"]["default"] == "false"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
