"""The PDF report: executing notebooks/20_report.ipynb on analysed sweeps and typesetting it through LaTeX.

The report only reads what the analysis wrote: a sweep whose analysis tables or figures are missing or
older than its trials is refused with the command that produces them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

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


def export_html(executed: Path, out_html: Path, title: str = DEFAULT_TITLE, author: str = DEFAULT_AUTHOR) -> Path:
    """The executed notebook as one web page beside the PDF, with the same content: its figures embedded and no
    script fetched from the network, the title and author escaped as every other string."""
    nb = nbformat.read(executed, as_version=4)
    nb.metadata["title"] = title  # the page's <title>: nbconvert escapes it for HTML
    heading = f"# {md_escape(title)}\n\n{md_escape(author)}, {date.today().isoformat()}"
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(heading))
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        cell["outputs"] = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
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
