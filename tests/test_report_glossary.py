"""The reference report's words: every term of art its body uses is in its glossary, no status code of the
analysis leaks into its prose, and it writes its units one way (µs, ×, ±).

The body is the whole report as the notebook displays it (copylab.report.sections.compose.blocks) from the committed
reference sweeps, everything before the glossary; the glossary is the appendix after it.
"""

from __future__ import annotations

import re
from datetime import date

import pytest

from copylab.paths import REFERENCE_DATA, REFERENCE_SERVERS_DATA
from copylab.report.blocks import Figure
from copylab.report.sections import compose
from tests.reference_analyses import References
from tests.test_reference_report import _companions

GLOSSARY_HEADING = r"# Appendix [A-Z]: Glossary"

# A term of art as the body may use it (a pattern) -> the glossary's word for it.  A reader must be able to look up
# every one the body uses.
TERMS_OF_ART = {
    r"\biovec": "iovec",
    r"\bqdisc\b|queueing discipline": "qdisc, blackhole",
    r"\bWelch": "Welch's t-test",
    r"\bCV\b": "CV",
    r"\bsplit_cpu\b": "same_cpu, split_cpu",
    r"\bpercentile\b": "percentile (99th, p99)",
    r"\boptmem_max\b": "optmem_max",
    r"\bUDP_SEGMENT\b": "UDP_SEGMENT",
    r"\bMAX_SKB_FRAGS\b": "MAX_SKB_FRAGS",
    r"random effect": "random effect",
    r"\bstream\b.*\brr\b|\brr\b.*\bstream\b": "stream, rr",
    r"\bblocks?\b": "block, redraw",
    r"\bredraws?\b": "block, redraw",
    r"\bband\b": "band (of a curve)",
    r"\bequivalent\b|\bundecided\b": "equivalent, undecided",
    r"\bcovariates?\b": "covariate",
    r"\bfloor\b": "floor (the host's)",
    r"memcpy as linked": "memcpy as linked",
    r"\bpinn(?:ing|ed|s)\b": "pinning (CPU, page)",
    r"MSG_SPLICE_PAGES": "MSG_SPLICE_PAGES",
    r"\bsoftirq\b": "softirq",
    r"scatter-gather": "scatter-gather",
    r"\bbootstrap\b": "bootstrap interval",
    r"\bskbs?\b": "skb",
    r"\bveth\b": "namespace, veth",
    r"\bsink\b": "sink",
    r"\bHolm\b": "Holm correction",
    r"\bFieller\b": "Fieller interval",
}

# What the analysis calls things, which a reader of the prose must never see.
STATUS_CODES = (
    r"\bchallengers?\b",
    r"\bcontenders?\b",
    r"\w@\w",
    r"always better",
    r"multiple crossings",
    r"\w_(?:always|never)_better",
)

# Units written another way than the report's one notation: 'us' for µs, '+-' for ±, an 'x' after a number or an
# interval where a ratio is meant (×).
MIXED_UNITS = (r"\d\s?us\b", r"\+-", r"\d(?:\.\d+)?x\b", r"\]\s?x\b")


@pytest.fixture(scope="module")
def report(references: References) -> tuple[str, str]:
    """(body, glossary) of the report of every committed reference sweep ./inv report --data renders."""
    sweeps = [references(REFERENCE_DATA), *_companions(references).values(), references(REFERENCE_SERVERS_DATA)]
    blocks = compose.blocks(compose.arrange(sweeps), date(2026, 1, 1))
    text = "\n\n".join(block.caption if isinstance(block, Figure) else block.text for block in blocks)
    body, _, glossary = text.partition(
        re.search(GLOSSARY_HEADING, text).group(0) if re.search(GLOSSARY_HEADING, text) else "\0"
    )
    assert glossary, "the report has no glossary"
    return body, glossary


def test_every_term_of_art_the_body_uses_is_in_the_glossary(report):
    body, glossary = report
    used = {word for pattern, word in TERMS_OF_ART.items() if re.search(pattern, body, re.DOTALL)}
    missing = sorted(word for word in used if f"| {word} |" not in glossary)
    assert used and not missing, missing


def test_no_status_code_of_the_analysis_leaks_into_the_prose(report):
    body, _ = report
    leaked = [m.group(0) for pattern in STATUS_CODES for m in re.finditer(pattern, body)]
    assert not leaked, leaked


def test_units_are_written_one_way(report):
    body, glossary = report
    mixed = [m.group(0) for pattern in MIXED_UNITS for m in re.finditer(pattern, body + glossary)]
    assert not mixed, mixed


def test_large_sender_pages_cannot_be_read_as_huge_pages(report):
    body, _ = report
    assert not re.search(r"large pages", body, re.IGNORECASE)
