"""The report's appendices: what follows the graded report (the answers at a glance, the study's parts,
Limitations and the method in short), lettered and linked both ways.

An appendix is a run of blocks that starts with a top-level heading ("# Title"); lettered() names it "Appendix A:
Title" and opens it with a line back to the answers at a glance.  Any text of the report that names an appendix as
"the appendix *Title*" or "the section *Title*" then names it by its letter too, and on the web page links to it
(cross_linked()).  The PDF's table of contents lists the appendices after the graded report.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import replace

from copylab.report.blocks import Block, Markdown

# Where an appendix leads back to: the anchor of the report's first section
# (copylab.report.experiments.copies.report.front).
START = "answers-at-a-glance"
BACK = "the answers at a glance"


def _title(block: Block) -> str | None:
    """The title of the appendix BLOCK opens, if it opens one."""
    if isinstance(block, Markdown) and block.text.startswith("# "):
        return block.text[2:].split("\n", 1)[0]
    return None


def _anchor(letter: str) -> str:
    return f"appendix-{letter.lower()}"


def lettered(content: Sequence[Block]) -> list[Block]:
    """CONTENT with each top-level heading renamed "Appendix X: Title" (A, B, ... in order), given its letter's
    anchor, and followed by a line back to the graded report."""
    letters = iter(string.ascii_uppercase)
    result: list[Block] = []
    for block in content:
        title = _title(block)
        if title is None or not isinstance(block, Markdown):
            result.append(block)
            continue
        letter = next(letters)
        rest = block.text[2 + len(title) :]
        back = f"*An appendix to the graded report, which ends with its method in short; back to {BACK}.*"
        result += [
            Markdown(f"# Appendix {letter}: {title}", anchor=_anchor(letter)),
            Markdown(back, links=((BACK, f"#{START}"),)),
        ]
        if rest.strip():
            result.append(replace(block, text=rest.strip("\n")))
    return result


def _titles(appendices: Sequence[Block]) -> dict[str, str]:
    """Each appendix's title -> its letter, from the headings lettered() gave them."""
    found = {}
    for block in appendices:
        title = _title(block)
        if title is not None and title.startswith("Appendix ") and ": " in title:
            head, name = title.split(": ", 1)
            found[name] = head.removeprefix("Appendix ")
    return found


def listing(appendices: Sequence[Block]) -> Markdown:
    """One paragraph naming every appendix (already lettered), for the end of the graded report: cross_linked()
    links each name to its appendix."""
    names = [f"the appendix *{name}*" for name in _titles(appendices)]
    return Markdown("**The appendices** hold the rest of the report: " + "; ".join(names) + ".")


def cross_linked(graded: Sequence[Block], appendices: Sequence[Block]) -> list[Block]:
    """GRADED and APPENDICES (already lettered) as one report, every mention of an appendix by its title ("the
    appendix *Title*", "the section *Title*") naming its letter and linking to it on the web page."""
    titles = _titles(appendices)
    result: list[Block] = []
    for block in [*graded, *appendices]:
        if not isinstance(block, Markdown):
            result.append(block)
            continue
        text, links = block.text, list(block.links)
        for name, letter in titles.items():
            named = f"Appendix {letter} (*{name}*)"
            found = False
            for mention in (f"the appendix *{name}*", f"the section *{name}*"):
                found = found or mention in text
                text = text.replace(mention, named)
            if found:
                links.append((named, f"#{_anchor(letter)}"))
        result.append(replace(block, text=text, links=tuple(links)))
    return result
