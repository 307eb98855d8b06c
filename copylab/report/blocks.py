"""What a report or a comparison is made of, in order: Markdown text and figures with their captions.
notebooks/20_report.ipynb displays them; copylab.report.comparison typesets them directly.

The web page (copylab.report.render.export_html) also uses what the PDF cannot: an anchor to link to, the files a
figure was drawn from, and the phrases of a text that name where its evidence is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Markdown:
    text: str
    anchor: str | None = None  # an id the web page gives this text, so that others can link to it
    # (phrase, target) pairs: in the web page each phrase of TEXT becomes a link to its target (an anchor '#id')
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Figure:
    """A figure already drawn to a PNG, and its caption (numbered when composed)."""

    path: Path
    caption: str
    sources: tuple[Path, ...] = ()  # the data files and the executed notebook it was drawn from

    @property
    def anchor(self) -> str:
        """The id the web page gives the figure: 'figure-' and its file's name."""
        return f"figure-{self.path.stem}"


Block = Markdown | Figure
