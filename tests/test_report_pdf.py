"""The whole report, rendered from a small synthetic sweep: a PDF that reads like a paper, with no code in it."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import os
import re
import shutil
import subprocess
from datetime import date
from urllib.parse import unquote

import nbformat
import pytest
from PIL import Image

from copylab.analysis.analyze_sweep import run_analysis_notebook
from copylab.errors import CopylabError
from copylab.experiments.copies import answers
from copylab.experiments.copies.answers import QUESTIONS
from copylab.formatting import code, fmt_bytes, markdown_table
from copylab.record import calibration
from copylab.record.store import SweepStore
from copylab.report import sections
from copylab.report.render import export_pdf, render_report
from tests.chromium import CHROMIUM, CHROMIUM_ARGS, needs_chromium
from tests.synthetic import make_trials, write_sweep
from tests.test_answers import make_sweep
from tests.test_calibrate import LEVELS, _host_with_rep_movsb_penalty

needs_latex = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("xelatex", "pandoc", "pdftotext", "pdfimages")),
    reason="needs texlive-xetex, pandoc and poppler-utils",
)
SWEEP = f"pdftest{os.getpid()}"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """(pdf path, its text with whitespace collapsed, the sweep's store) for a synthetic sweep analysed as ./inv
    analyze does it: through the analysis notebook, kept where the report's web page links it (removed after)."""
    base = tmp_path_factory.mktemp("report")
    trials = make_trials(sweep=SWEEP, sizes=(64, 1024, 4096, 16384, 65536), rr_sizes=(1024,), threads=(1, 2), trials=3)
    data = write_sweep(
        base / "data" / SWEEP, trials, {"calibration": {"memcpy_gbps": 90.0, "runs": 7, "buffer_mib": 128}}
    )
    store = SweepStore(data, figures_root=base / "figures")
    notebook = run_analysis_notebook(store)
    try:
        out = base / "report" / "report.pdf"
        pdf = render_report([store], out, title="Synthetic test report", author="pytest")
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        yield pdf, " ".join(text.split()), store
    finally:
        notebook.unlink(missing_ok=True)


@needs_latex
def test_pdf_is_written_with_the_executed_notebook_beside_it(rendered):
    pdf, text, _ = rendered
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert pdf.with_suffix(".ipynb").is_file()
    assert "Synthetic test report" in text and "pytest" in text


@needs_latex
def test_the_pdf_names_the_data_and_code_of_its_numbers(rendered):
    """The setup table gives trials.csv's sha256 in full, every figure's caption its first 12 hex digits and the
    commit that measured it; the PNGs carry both in their metadata."""
    _, text, store = rendered
    sha256, commit = store.trials_sha256(), store.read_manifest().git.commit
    assert " ".join(sha256[i : i + 16] for i in range(0, 64, 16)) in text
    assert text.count(f"trials.csv sha256 {sha256[:12]}") >= 5 and f"copylab {commit[:12]}" in text
    with Image.open(next(store.figures_dir.glob("*.png"))) as image:
        assert sha256 in image.info["Source"] and commit in image.info["Source"]
        assert image.info["Software"].startswith("copylab ")


def test_the_report_reads_the_analysis_and_never_redoes_it(tmp_path):
    trials = make_trials(sweep="unanalysed", sizes=(1024, 4096), workloads=("stream",), threads=(1,), trials=3)
    store = SweepStore(write_sweep(tmp_path / "data" / "unanalysed", trials), figures_root=tmp_path / "figures")
    with pytest.raises(
        CopylabError,
        match=r"no current summary.csv, comparisons.csv, crossovers.csv \(run ./inv "
        r"analyze --data .*unanalysed first\)",
    ):
        render_report([store], tmp_path / "r.pdf")
    assert not (tmp_path / "figures").exists() and not store.table_path("summary").exists()


@needs_latex
def test_every_question_is_a_heading_in_order(rendered):
    _, text, _ = rendered
    positions = [text.find(question) for question in QUESTIONS]
    assert all(p >= 0 for p in positions), [q for q, p in zip(QUESTIONS, positions, strict=True) if p < 0]
    assert positions == sorted(positions)


@needs_latex
def test_crossover_sizes_of_the_csv_appear(rendered):
    _, text, store = rendered
    crossovers = store.read_table("crossovers")
    found = crossovers[
        (crossovers["status"] == "crossover")
        & (crossovers["metric"] == "throughput_gbps")
        & (crossovers["workload"] == "stream")
    ]
    assert len(found) >= 1  # the synthetic one_copy overtakes two_copy at 4 KiB
    for row in found.itertuples():
        for value in (row.crossover_at, row.ci_low, row.ci_high):
            assert fmt_bytes(value) in text


@needs_latex
def test_sections_and_figures_are_there(rendered):
    pdf, text, _ = rendered
    for heading in (
        "Setup",
        "Method",
        "Part A",
        "Part D",
        "How far from the limit",
        "Part E",
        "Limitations",
        "Reproducing this report",
    ):
        assert heading in text
    assert "copies 90.0 Gbit/s" in text and "Fraction of the bound" in text
    assert "./inv report --data" in text
    listing = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    images = [line for line in listing.splitlines()[2:] if " image " in line]
    assert len(images) >= 5  # the diagram and the figures of part D


@needs_latex
def test_no_code_prompts_or_raw_frames_leak(rendered):
    _, text, _ = rendered
    for leak in ("import ", "def ", "copylab.", "display(", "In [", "Out[", "dtype", "NaN", "Traceback"):
        assert leak not in text, leak
    assert not re.search(r"\bnan\b", text)


def test_missing_sweep_is_one_line_error(tmp_path):
    with pytest.raises(CopylabError, match="not a sweep directory"):
        render_report([SweepStore(tmp_path / "nothing")], tmp_path / "r.pdf")


def _with_parameters(sweep, **changes):
    manifest = dataclasses.replace(sweep.manifest, parameters=dataclasses.replace(sweep.manifest.parameters, **changes))
    return dataclasses.replace(sweep, manifest=manifest)


def test_reproduce_gives_the_sweep_command_from_the_manifest(tmp_path):
    sweep = _with_parameters(make_sweep(), trials=5, duration_s=1.0, warmup_s=0.3, seed=1, mtu=1500)
    sweep = dataclasses.replace(sweep, store=SweepStore(tmp_path / "elsewhere" / "fixture"))
    text = sections.reproduce(sweep)
    command = " ".join(text.replace("\\\n", " ").split())
    assert command.count("./inv run-sweep --name fixture-again ") == 1  # a new name: run-sweep refuses an old one
    for words in (
        "--implementations two_copy,one_copy,zero_copy --workloads stream,rr --sizes 64,1K,4K,16K,64K --rr-sizes 64 "
        "--threads 1,4",
        "--trials 5 --duration 1.0 --warmup 0.3 --pinning same_cpu",
        "--seed 1 --mtu 1500 --path veth --optmem-max 131072",
    ):
        assert words in command, words
    assert not re.search(r"needs root|\(root\)|root for", text)  # none of it needs root: a user namespace does
    assert f"./inv report --data {tmp_path / 'elsewhere' / 'fixture'}" in text  # outside the project: absolute
    assert all(len(line) <= 72 for line in text.splitlines() if line.startswith(("./inv run-sweep", "    --")))
    assert "commit `abc`" in text


def test_front_matter_and_method_come_from_the_manifest():
    sweep = _with_parameters(make_sweep(), duration_s=1.0, warmup_s=0.3, mtu=1500, optmem_max=131072)
    host = dataclasses.replace(sweep.manifest.host, cpu_model="Intel(R) <weird> CPU")
    sweep = dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, host=host))
    text = sections.front_matter(sweep, date(2026, 1, 2))
    assert "Report generated on 2026-01-02" in text and "(not finished)" not in text
    assert "| CPU | Intel(R) \\<weird\\> CPU |" in text and "| net.core.optmem_max | 131,072\u00a0B |" in text
    assert "| Stream message sizes | 64\u00a0B, 1\u00a0KiB, 4\u00a0KiB, 16\u00a0KiB, 64\u00a0KiB |" in text
    method = sections.method(sweep)
    assert "warm-up of 0.300 s" in method and "window of 1.00 s" in method and "MTU of 1500 B" in method
    assert "`same_cpu`: sender and receiver both on CPU 0" in method
    assert "reaches more than 10.0% either side of its mean" in method


def test_a_further_sweep_is_summed_up_by_its_settings_and_crossovers():
    sweep = make_sweep()
    assert sections.sweep_heading(sweep).startswith("## Sweep `fixture`")
    text = answers.crossover_summary(sweep)
    assert text.startswith("**One-copy against two-copy.**") and "5,793 B" in text


@needs_latex
def test_a_failing_notebook_cell_is_one_line_error(rendered, tmp_path):
    _, _, store = rendered
    broken = SweepStore(shutil.copytree(store.directory, tmp_path / "data" / SWEEP), figures_root=store.figures_root)
    crossovers = broken.read_table("crossovers")
    crossovers["status"] = "maybe"
    broken.write_table("crossovers", crossovers)
    with pytest.raises(CopylabError) as error:
        render_report([broken], tmp_path / "report" / "report.pdf")
    message = str(error.value)
    assert "\n" not in message
    assert re.search(
        r"report notebook failed in cell \d+: CopylabError: crossovers.csv: unknown status 'maybe'", message
    )
    assert (tmp_path / "report" / "report.ipynb").is_file() and not (tmp_path / "report" / "report.pdf").exists()


@pytest.mark.skipif(shutil.which("pdftohtml") is None, reason="needs poppler-utils")
@needs_latex
def test_no_figure_runs_over_the_page_number(rendered):
    pdf, _, _ = rendered
    subprocess.run(["pdftohtml", "-xml", "-q", str(pdf), str(pdf.parent / "layout")], check=True)
    xml = (pdf.parent / "layout.xml").read_text()
    checked = 0
    for page in re.split(r"<page ", xml)[1:]:
        height = int(re.search(r'height="(\d+)"', page).group(1))
        footer = [int(top) for top, text in re.findall(r'<text top="(\d+)"[^>]*>(\d+)</text>', page)]
        footer = [top for top in footer if top > 0.85 * height]
        for top, size in re.findall(r'<image top="(\d+)" left="\d+" width="\d+" height="(\d+)"', page):
            checked += 1
            assert int(top) + int(size) < min(footer, default=height), f"a figure reaches the footer: {page[:40]}"
    assert checked >= 5


@needs_latex
def test_adjacent_table_cells_never_run_together(rendered):
    """Two cells of a row set so close that pdftotext reads them as one word ('ImplementationReceive',
    'thread94,461') means a column ran into the next."""
    pdf, text, _ = rendered
    executed = nbformat.read(pdf.with_suffix(".ipynb"), as_version=4)
    outputs = [o for cell in executed.cells for o in cell.get("outputs", []) if "data" in o]
    tables = [output["data"].get("text/markdown", "") for output in outputs]
    assert sum(line.startswith("| ") for table in tables for line in table.splitlines()) >= 10
    assert not _joined_cells(tables, text), "cells run together"


def _joined_cells(tables: list[str], text: str) -> list[str]:
    """The last word of a cell and the first of the next, written as one word, that TEXT holds: a column that ran
    into the next.  Only pairs whose left cell ends in a word count, and only where no word of TEXT runs into them."""
    rows = [
        [cell.strip().strip("`*") for cell in line.strip().strip("|").split(" | ")]
        for table in tables
        for line in table.splitlines()
        if line.startswith("| ")
    ]
    pairs = {
        left.split()[-1] + right.split()[0]
        for row in rows
        for left, right in itertools.pairwise(row)
        if left.split() and right.split() and re.search(r"[A-Za-z_]{3}$", left.split()[-1])
    }
    return sorted(joined for joined in pairs if re.search(rf"(?<![\w,.]){re.escape(joined)}", text))


SERVER_MODELS = ("iterative", "thread", "fork", "select", "poll", "epoll", "uring")


def _server_tables() -> list[str]:
    """Tables shaped like the servers section's on a quick sweep: a model per row, one-digit cells under connection
    counts as headers, verdict words, and a row of intervals and ratios too many for one line."""
    counts = (1, 2, 4, 8, 16, 32, 64, 100, 1000)
    return [
        markdown_table(
            {"model": code(m), **{str(c): str((i + j) % 10) for j, c in enumerate(counts)}}
            for i, m in enumerate(SERVER_MODELS)
        ),
        markdown_table({"model": code(m), "1": "5", "10": "better", "100": "never better"} for m in SERVER_MODELS),
        markdown_table(
            {
                "model": code(m),
                **{f"metric {k} against `thread`": f"94,461 [93,{k}00, 95,{k}00]" for k in range(3)},
                **{f"ratio {k}": f"1.0{k} [0.9{k}, 1.1{k}] x" for k in range(3)},
            }
            for m in SERVER_MODELS
        ),
    ]


@needs_latex
def test_narrow_server_columns_never_run_together_nor_break_an_interval(tmp_path):
    """A table that fits a line was padded to ten dashes a column, so pandoc sized its columns by the dashes: a
    one-digit column took the width 'iterative' needed, which ran into the next cell ('iterative0', 'select1',
    'thread5').  A row of intervals too many for a line broke them after their comma; now it becomes two tables."""
    tables = _server_tables()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Tables.")])
    for table in tables:
        cell = nbformat.v4.new_code_cell("")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": table, "text/plain": ""})]
        nb.cells.append(cell)
    nbformat.write(nb, tmp_path / "tables.ipynb")
    pdf = export_pdf(tmp_path / "tables.ipynb", tmp_path / "tables.pdf")
    lines = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    lines = lines.replace("\u00a0", " ")
    assert not _joined_cells(tables, " ".join(lines.split())), "cells run together"
    intervals = {match for table in tables for match in re.findall(r"\[[^\]]*\] x|\[[^\]]*\]", table)}
    assert len(intervals) >= 6
    broken = [interval for interval in intervals if interval.replace("\u00a0", " ") not in lines]
    assert not broken, f"broken inside a cell: {broken}"


@pytest.mark.skipif(shutil.which("pdftohtml") is None, reason="needs poppler-utils")
@needs_latex
def test_a_tall_figure_stays_above_the_page_number(tmp_path):
    """nbconvert bounds figures by 0.9 of the paper's height, more than the text's: a tall one (the servers
    section's four rows of panels) ran over the page number."""
    Image.new("RGB", (300, 1500), "navy").save(tmp_path / "tall.png")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Before the figure.")])
    nb.cells.append(nbformat.v4.new_code_cell("", outputs=[]))
    with open(tmp_path / "tall.png", "rb") as png:
        data = {"image/png": base64.b64encode(png.read()).decode()}
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data=data)]
    nbformat.write(nb, tmp_path / "tall.ipynb")
    pdf = export_pdf(tmp_path / "tall.ipynb", tmp_path / "tall.pdf")
    subprocess.run(["pdftohtml", "-xml", "-q", str(pdf), str(tmp_path / "layout")], check=True)
    page = next(page for page in (tmp_path / "layout.xml").read_text().split("<page ")[1:] if "<image " in page)
    top, size = (int(v) for v in re.search(r'<image top="(\d+)" left="\d+" width="\d+" height="(\d+)"', page).groups())
    footer = min(int(t) for t, _ in re.findall(r'<text top="(\d+)"[^>]*>(\d+)</text>', page))
    assert top + size < footer


# The links of each item of the list that follows the heading "Answers at a glance".
GLANCE_LINKS = """() => {
  const heading = [...document.querySelectorAll('h1')].find(h => h.textContent.startsWith('Answers at a glance'));
  const items = [...document.querySelectorAll('ol > li')].filter(li => heading.compareDocumentPosition(li) & 4);
  return items.slice(0, 6).map(li => [...li.querySelectorAll('a[href]')].map(a => a.getAttribute('href')));
}"""


@needs_chromium
@pytest.mark.timeout(120)
@needs_latex
def test_the_web_page_is_whole_on_its_own(rendered):
    """report.html beside the PDF, in headless Chromium: every image loads, every link leads somewhere, nothing is
    fetched from the network, and it says what the PDF says."""
    sync_api = pytest.importorskip("playwright.sync_api")
    pdf, text, _ = rendered
    page_file = pdf.with_suffix(".html")
    fetched: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            page.goto(page_file.as_uri())
            images = page.eval_on_selector_all("img", "els => els.map(e => [e.complete, e.naturalWidth])")
            links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
            ids = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
            glance = page.evaluate(GLANCE_LINKS)
            body = " ".join(page.inner_text("body").split())
        finally:
            browser.close()
    assert len(images) >= 5 and all(complete and width > 0 for complete, width in images), images
    broken = [href for href in links if href.startswith("#") and href[1:] not in ids]
    files = [href for href in links if not href.startswith(("#", "http"))]
    broken += [href for href in files if href.startswith("/") or not (page_file.parent / unquote(href)).is_file()]
    assert not broken and not fetched, (broken, fetched)
    # every figure leads to the data it was drawn from and the executed notebook that drew it, relatively
    for name in ("trials.csv", "manifest.json", "summary.csv", f"{SWEEP}.ipynb"):
        assert sum(href.endswith(f"/{name}") for href in files) >= len(images) - 1, name  # the diagram has no data
    figure_ids = [i for i in ids if i.startswith("figure-")]
    assert len(figure_ids) >= len(images) - 1
    # every answer at a glance leads to its evidence: a figure, its question's answer or a data file
    assert len(glance) == len(QUESTIONS) and all(glance), glance
    assert {f"#question-{n}" for n in range(1, len(QUESTIONS) + 1)} <= {h for hrefs in glance for h in hrefs}
    assert "Synthetic test report" in body and "Answers at a glance" in body and "Appendix D: Glossary" in body
    for question in QUESTIONS:
        assert question in body and question in text


def test_the_method_shows_the_copy_calibration_ratios_with_their_spread():
    """Appendix B gives every ratio the calibration weighs, at every size, with its least and most over the rounds,
    and says a finding needs the least to clear the threshold; a manifest without copy samples gives no table."""
    sweep = make_sweep()
    record = calibration.derive(128, 7, 60.0, 32 << 20, "0", LEVELS, _host_with_rep_movsb_penalty(), ["erms"])
    sweep = dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, calibration=record))
    text = sections.method(sweep)
    assert "**The copy calibration.**" in text and "in 3 rounds" in text and "exceeds 2.00" in text
    assert "this calibration has 2 findings" in text
    table = text[text.index("| Copy size") :]
    assert table.count("\n| ") == len({p.working_set_bytes for p in record.copy_points})
    assert "finding" in table and "[" in table
    assert "The copy calibration" not in sections.method(make_sweep())
