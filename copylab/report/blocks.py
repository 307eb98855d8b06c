"""What a report or a comparison is made of, in order: Markdown text and figures with their captions.
notebooks/20_report.ipynb displays them; copylab.report.comparison typesets them directly."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Markdown:
    text: str


@dataclass(frozen=True)
class Figure:
    """A figure already drawn to a PNG, and its caption (numbered when composed)."""

    path: Path
    caption: str


Block = Markdown | Figure
