"""Input is rendered, never executed: every string from the command line or a sweep's files prints literally.

A report whose title, author and manifest strings hold every character LaTeX, Markdown, HTML or matplotlib's
mathtext would read as markup is analysed and typeset; pdftotext must find each string as it was given."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import unicodedata

import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.render import render_report
from tests.synthetic import make_trials, write_sweep

SPECIALS = "\\ $ % # & _ { } ~ ^ < >"
TITLE = f"Title {SPECIALS} $x$ end"
AUTHOR = r"X \input{/etc/hostname} Y & 50% #1"
HOST = {
    "hostname": f"host{SPECIALS}",
    "kernel": r"6.0 \textbf{bold} $k$",
    "cpu_model": r"CPU <b>not bold</b> &amp; $\alpha$",
    "virtualization": "kvm-ish_~^",
}


def _printed(text: str) -> str:
    """pdftotext's text with whitespace collapsed and the spacing accents LaTeX sets for ~ and ^ read as ASCII."""
    text = unicodedata.normalize("NFKC", text).replace("\u02dc", "~").replace("\u02c6", "^")
    return " ".join(text.split())


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("xelatex", "pandoc", "pdftotext")),
    reason="needs texlive-xetex, pandoc and poppler-utils",
)
def test_every_given_string_prints_literally(tmp_path):
    trials = make_trials(sweep="escapes", sizes=(1024, 4096), rr_sizes=(1024,), threads=(1,), trials=3)
    overrides = {"host": HOST, "toolchain": {"gcc": f"gcc {SPECIALS}"}}
    store = SweepStore(write_sweep(tmp_path / "data" / "escapes", trials, overrides), tmp_path / "figures")
    analyze(store, plugins.draw)  # a '$' in a title of the figures must not start mathtext
    pdf = render_report([store], tmp_path / "report" / "report.pdf", title=TITLE, author=AUTHOR)
    text = _printed(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout)
    for given in (TITLE, AUTHOR, *HOST.values(), f"gcc {SPECIALS}"):
        assert " ".join(given.split()) in text, given
    # the web page beside it: markup in a string would vanish into tags; printed, it survives their removal
    page = pdf.with_suffix(".html").read_text()
    body = page[page.index("<body") :]
    shown = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())
    for given in (TITLE, AUTHOR, *HOST.values(), f"gcc {SPECIALS}"):
        assert " ".join(given.split()) in shown, given
