"""An answer to one of the study's questions in the five parts a grader reads for: the claim, the numbers behind it,
the mechanism (with its kernel citation), the test of that mechanism and the limits of this host (with the command
that would show more).  Every Part E answer is one Answer, rendered by Answer.markdown(); the answers at a glance
show its summary, in words of their own, and how sure it is.
"""

from __future__ import annotations

from dataclasses import dataclass

LABELS = ("Claim", "Numbers", "Mechanism", "Test", "Limits")
IN_SHORT = "**In short:** "
HOW_SURE = " **How sure:** "


@dataclass(frozen=True)
class Answer:
    claim: str  # one sentence (or two) naming the sizes, levels or thread counts
    numbers: str  # the numbers with their intervals, and the table that shows them
    mechanism: str  # in OS or hardware terms, citing the kernel's source or Documentation/
    test: str  # the second measurement that would come out otherwise if the mechanism were wrong
    limits: str  # what this host cannot show, and the command that would show it elsewhere
    summary: str = ""  # the answers at a glance: the answer shorter, in other words than the claim
    sure: str = ""  # how sure, for the answers at a glance

    def markdown(self) -> str:
        """The five parts, each its own paragraph opened by its label in bold; a part left empty says so."""
        parts = (self.claim, self.numbers, self.mechanism, self.test, self.limits)
        return "\n\n".join(
            f"**{label}.**{_opening(_capital(text.strip()) or 'Not available from this sweep.')}"
            for label, text in zip(LABELS, parts, strict=True)
        )


def _opening(text: str) -> str:
    """TEXT after its label: on the label's line, or in a paragraph of its own where it opens with a list or a
    table, which Markdown sets only at a paragraph's start."""
    return f"\n\n{text}" if text.startswith(("- ", "|", "**")) else f" {text}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class InShort:
    """An answer text whose first paragraph reads "**In short:** CLAIM **How sure:** SURE [Metric: NOTE]", taken
    apart: the claim, how sure, every later paragraph and the method note (which the method in short says once)."""

    claim: str
    sure: str
    rest: str
    note: str = ""


def in_short(text: str) -> InShort:
    """TEXT taken apart (InShort); a text without an "In short" paragraph is all rest."""
    first, _, rest = text.partition("\n\n")
    if not first.startswith(IN_SHORT):
        return InShort("", "", text)
    claim, _, sure = first.removeprefix(IN_SHORT).partition(HOW_SURE)
    sure, _, note = sure.partition(" Metric: ")
    return InShort(claim.strip(), sure.strip(), rest, f"Metric: {note}" if note else "")
