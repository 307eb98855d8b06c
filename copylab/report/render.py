"""The PDF report: executing notebooks/20_report.ipynb on analysed sweeps and typesetting it through LaTeX.

The report only reads what the analysis wrote: a sweep whose analysis tables or figures are missing or
older than its trials is refused with the command that produces them.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import nbformat
from nbconvert import HTMLExporter, LatexExporter, PDFExporter
from nbconvert.exporters.pdf import LatexFailed
from nbconvert.filters import escape_latex

from copylab import experiments
from copylab.analysis.notebooks import execute
from copylab.errors import CopylabError
from copylab.formatting import md_escape
from copylab.paths import FIGURES, NOTEBOOKS, ROOT
from copylab.record.store import SweepStore

NOTEBOOK = NOTEBOOKS / "20_report.ipynb"
DEFAULT_TITLE = "What data movement costs in Linux TCP I/O: two-copy, one-copy and zero-copy sends"
DEFAULT_AUTHOR = "copylab"


def _latex_error(log: str) -> str:
    errors = [line for line in log.splitlines() if line.startswith("!")]
    return errors[0] if errors else "see the LaTeX log"


# nbconvert bounds a figure by 0.9 of the paper's height, which is more than the text's: a tall figure ran over the
# page number.  A bound inside the text height leaves room for the figure's caption below it too.
PAPER_BOUND = r"{0.9\paperheight}"
TEXT_BOUND = r"{0.72\textheight}"


class _FittingLatex(LatexExporter):
    """nbconvert's LaTeX with every figure bounded by the text height (TEXT_BOUND)."""

    def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> tuple[str, Any]:
        latex, resources = super().from_notebook_node(nb, resources=resources, **kw)
        if PAPER_BOUND not in latex:
            raise CopylabError("nbconvert's LaTeX template no longer bounds figures as copylab expects")
        return latex.replace(PAPER_BOUND, TEXT_BOUND), resources


class _PaperExporter(PDFExporter, _FittingLatex):
    """PDFExporter typesetting _FittingLatex's LaTeX (it comes between PDFExporter and LatexExporter)."""


def export_pdf(executed: Path, out_pdf: Path, title: str = DEFAULT_TITLE, author: str = DEFAULT_AUTHOR) -> Path:
    """Export an executed notebook to PDF through LaTeX, without code, prompts or stderr."""
    nb = nbformat.read(executed, as_version=4)
    nb.metadata["title"] = title
    # nbconvert's template escapes the title and the date but puts the authors' names into LaTeX as they are
    nb.metadata["authors"] = [{"name": escape_latex(author)}]
    nb.metadata["date"] = date.today().isoformat()
    for cell in nb.cells:
        # warnings belong in the executed notebook for whoever debugs, not in the paper
        outputs = cell.get("outputs", [])
        cell["outputs"] = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    exporter = _PaperExporter()
    # Tables (longtable) settle their column widths in a second pass; a third, nbconvert's default, changes nothing.
    exporter.latex_count = 2
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    try:
        resources = {"metadata": {"name": out_pdf.stem, "path": str(executed.parent)}}
        body, _ = exporter.from_notebook_node(nb, resources=resources)
    except LatexFailed as error:
        raise CopylabError(f"xelatex could not typeset the report: {_latex_error(error.output)}") from None
    out_pdf.write_bytes(body)
    return out_pdf


HTML_TEMPLATE = Path(__file__).with_name("report.html.j2")


def _relative_link(path: Path, page_dir: Path) -> str:
    """PATH as a link from a page in PAGE_DIR: relative, so that it works wherever the project is opened."""
    return quote(Path(os.path.relpath(path, page_dir)).as_posix())


def _linked(text: str, links: list[tuple[str, str]]) -> str:
    """TEXT with each phrase of LINKS made a link to its target, longest phrases first so that none nests."""
    targets = dict(links)
    if not targets:
        return text
    phrases = "|".join(re.escape(phrase) for phrase in sorted(targets, key=len, reverse=True))
    return re.sub(rf"(?<![\w\[])({phrases})(?![\w\]])", lambda m: f"[{m.group(1)}]({targets[m.group(1)]})", text)


def _web_markdown(output: Any, page_dir: Path) -> None:
    """An output's Markdown as the web page shows it (the metadata of notebooks/20_report.ipynb): an anchor before it,
    its phrases linked to their evidence (an anchor, or a file linked relatively), and under a figure's caption the
    files it was drawn from."""
    web = output.get("metadata", {}).get("copylab")
    text = output.get("data", {}).get("text/markdown")
    if not web or text is None:
        return
    links = [
        (phrase, target if target.startswith("#") else _relative_link(Path(target), page_dir))
        for phrase, target in web.get("links") or []
    ]
    text = _linked(text, links)
    sources = [Path(path) for path in web.get("sources") or []]
    data = [f"[{md_escape(p.name)}]({_relative_link(p, page_dir)})" for p in sources if p.suffix != ".ipynb"]
    notebooks = [_relative_link(path, page_dir) for path in sources if path.suffix == ".ipynb"]
    if data:
        drawn = f"Drawn from {', '.join(data)}" + (f" by [the executed notebook]({notebooks[0]})" if notebooks else "")
        text += f"\n\n{drawn}."
    if web.get("anchor"):
        text = f'<a id="{html.escape(web["anchor"])}"></a>\n\n{text}'
    output["data"]["text/markdown"] = text


def export_html(executed: Path, out_html: Path, title: str = DEFAULT_TITLE, author: str = DEFAULT_AUTHOR) -> Path:
    """The executed notebook as one web page beside the PDF, with the same content: its figures embedded and no
    script fetched from the network, the title and author escaped as every other string.  Each figure links to the
    files it was drawn from, and text links to its evidence (_web_markdown)."""
    nb = nbformat.read(executed, as_version=4)
    nb.metadata["title"] = title  # the page's <title>: nbconvert escapes it for HTML
    heading = f"# {md_escape(title)}\n\n{md_escape(author)}, {date.today().isoformat()}"
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(heading))
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        cell["outputs"] = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        for output in cell["outputs"]:
            _web_markdown(output, out_html.parent.resolve())
    exporter = HTMLExporter(template_name="lab", template_file=str(HTML_TEMPLATE))
    exporter.embed_images = True
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": out_html.stem}})
    out_html.write_text(body, encoding="utf-8")
    return out_html


def render_report(
    stores: Sequence[SweepStore],
    out_pdf: str | Path,
    title: str = DEFAULT_TITLE,
    author: str = DEFAULT_AUTHOR,
) -> Path:
    """Execute the report notebook on analysed sweeps and write ``out_pdf``, and the same report as a web page beside
    it (same stem, .html).

    The first copies sweep is the main one, the first servers sweep gets the section "How a server waits"; the
    executed notebook is kept next to the PDF (same stem, .ipynb).
    """
    if not stores:
        raise CopylabError("no sweep directory given")
    for store in stores:
        if not store.trials_path.is_file():
            raise CopylabError(f"{store.directory}: not a sweep directory (no trials.csv)")
        missing = store.missing_tables()
        if missing:
            raise CopylabError(
                f"{store.directory}: no current {', '.join(missing)} (run ./inv analyze --data {store.directory} first)"
            )
    main = experiments.main().name
    if all(store.read_manifest().parameters.experiment != main for store in stores):
        raise CopylabError(f"a report needs a {main} sweep (./inv run-sweep): its study parts describe one")
    tools = [tool for tool in ("xelatex", "pandoc") if shutil.which(tool) is None]
    if tools:
        raise CopylabError(
            f"{', '.join(tools)} not found: the PDF needs texlive-xetex and pandoc (./inv installs them)"
        )
    out_pdf = Path(out_pdf).resolve()
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    executed = out_pdf.with_suffix(".ipynb")
    parameters = {
        "data_dirs": [str(store.directory) for store in stores],
        "figures_root": None if stores[0].figures_root == FIGURES.resolve() else str(stores[0].figures_root),
        "title": title,
        "author": author,
    }
    execute(NOTEBOOK, executed, parameters, ROOT, "report")
    pdf = export_pdf(executed, out_pdf, title or DEFAULT_TITLE, author or DEFAULT_AUTHOR)
    export_html(executed, out_pdf.with_suffix(".html"), title or DEFAULT_TITLE, author or DEFAULT_AUTHOR)
    return pdf
