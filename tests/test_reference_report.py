"""The committed reference sweeps' report says the same things from the same data, refactoring after refactoring.

tests/golden/reference_report.md (the copies sweep), reference_servers_report.md (the servers sweep) and
reference_open_load_report.md (the servers sweep under open load) hold the Markdown of every data-driven section
as it was; a change to the prose or the statistics shows here as a diff.
When a change is intended, look at what would change, then write the files, and commit them with the change that
explains it:
    python -m tests.test_reference_report            # the unified diff of each golden file; writes nothing
    python -m tests.test_reference_report --write    # writes them
A golden text is also checked against the tables it came from: every number of the copies report's answers
(crossover sizes and intervals, ratios, verdicts, counts of trials and configurations) is the analysis tables'.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import math
import re
import shutil
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.paths import (
    REFERENCE_CACHES_DATA,
    REFERENCE_DATA,
    REFERENCE_MMAP_DATA,
    REFERENCE_MMAP_SMALL_DATA,
    REFERENCE_OPEN_LOAD_DATA,
    REFERENCE_SERVERS_DATA,
    REFERENCE_SINK_DATA,
    REFERENCE_THREADS_DATA,
    ROOT,
)
from copylab.record.store import SweepStore
from copylab.report import plugins, sections
from copylab.report.experiments.copies import answers, captions, glance
from copylab.report.experiments.copies import report as copies_report
from copylab.report.experiments.servers import open_load
from copylab.report.experiments.servers import report as server_report
from copylab.report.results import Results, load_results
from tests.reference_analyses import References

GOLDEN = Path(__file__).parent / "golden" / "reference_report.md"
GOLDEN_SERVERS = Path(__file__).parent / "golden" / "reference_servers_report.md"
GOLDEN_OPEN_LOAD = Path(__file__).parent / "golden" / "reference_open_load_report.md"


def _analysed(scratch: Path, reference: Path) -> Results:
    """A copy of a reference sweep inside SCRATCH, analysed there."""
    directory = scratch / "data" / reference.name
    directory.mkdir(parents=True)
    for name in ("trials.csv", "manifest.json"):
        shutil.copy(reference / name, directory / name)
    store = SweepStore(directory, figures_root=scratch / "figures", data_root=scratch / "data")
    analyze(store, plugins.draw)
    return load_results(store)


def _companions(analysed: Callable[[Path], Results]) -> dict[str, Results]:
    """The references ./inv report's sweeps of the sink and of the mapping receiver stand for, analysed."""
    return {
        "sink": analysed(REFERENCE_SINK_DATA),
        "mmap": analysed(REFERENCE_MMAP_DATA),
        "mmap-small": analysed(REFERENCE_MMAP_SMALL_DATA),
        "caches": analysed(REFERENCE_CACHES_DATA),
        "threads": analysed(REFERENCE_THREADS_DATA),
    }


def compose(scratch: Path, sweep: Path = REFERENCE_DATA) -> str:
    """A copies sweep's report sections (the reference's by default, with the sink's and the mapping receiver's
    references beside it), as the notebook has them."""
    companions = _companions(functools.partial(_analysed, scratch)) if sweep == REFERENCE_DATA else {}
    return compose_results(_analysed(scratch, sweep), companions)


def compose_results(results: Results, companions: dict[str, Results] | None = None) -> str:
    """The copies report's sections from analysed RESULTS, with the sink's and the mapping receiver's sweeps
    COMPANIONS holds beside it ("sink", "mmap")."""
    companions = companions or {}
    parts = [glance.at_a_glance(results, companions), glance.part_b(results), glance.part_c(results)]
    parts += [
        sections.front_matter(results, date(2026, 1, 1)),
        sections.method(results),
        answers.copy_evidence(results),
    ]
    parts += [captions.caption(kind, results) for kind in captions.CAPTIONS]
    parts.append(copies_report.copy_limit(results))
    parts += [f"## {question}\n\n{answer.markdown()}" for question, answer in answers.answers(results, companions)]
    parts += [block.text for block in copies_report.where_it_pays(results, companions) if hasattr(block, "text")]
    parts.append(sections.limitations(results, companions))
    return "\n\n----\n\n".join(parts)


def compose_servers(analysed: Callable[[Path], Results]) -> str:
    """The servers reference's section "How a server waits", as the notebook has it."""
    results = analysed(REFERENCE_SERVERS_DATA)
    parts = [server_report.introduction(results)]
    parts += [server_report.caption(name, results) for name in server_report.FIGURES]
    parts += [f"## {question}\n\n{answer}" for question, answer in server_report.answers(results)]
    parts.append(sections.limitations(results))
    return "\n\n----\n\n".join(parts)


def compose_open_load(analysed: Callable[[Path], Results]) -> str:
    """The open-load reference's section "How a server waits under open load", as the notebook has it."""
    results = analysed(REFERENCE_OPEN_LOAD_DATA)
    parts = [open_load.introduction(results), open_load.caption(results), open_load.answer_target(results)]
    return "\n\n----\n\n".join(parts)


@pytest.fixture(scope="module")
def copies_reference(references: References) -> tuple[Results, Path]:
    """The copies reference's results and the directory of its tables."""
    return references(REFERENCE_DATA), references.directory(REFERENCE_DATA)


@pytest.fixture(scope="module")
def companions(references: References) -> dict[str, Results]:
    """The sink's and the mapping receiver's reference sweeps, analysed."""
    return _companions(references)


def test_the_reference_report_says_what_it_said(copies_reference, companions):
    assert compose_results(copies_reference[0], companions) == GOLDEN.read_text()


def test_the_servers_section_says_what_it_said(references):
    assert compose_servers(references) == GOLDEN_SERVERS.read_text()


def test_the_open_load_section_says_what_it_said(references):
    assert compose_open_load(references) == GOLDEN_OPEN_LOAD.read_text()


def test_regenerating_shows_the_diff_and_writes_only_when_asked(tmp_path, capsys):
    golden = tmp_path / "golden.md"
    golden.write_text("the same line\nan old line\n")
    goldens = {golden: lambda scratch: "the same line\na new line\n"}
    assert regenerate(False, goldens) == 1
    shown = capsys.readouterr().out
    assert "-an old line\n+a new line\n" in shown and "pass --write" in shown
    assert golden.read_text() == "the same line\nan old line\n", "nothing written without --write"
    assert regenerate(True, goldens) == 0 and golden.read_text() == "the same line\na new line\n"
    assert regenerate(False, goldens) == 0 and "up to date" in capsys.readouterr().out.splitlines()[-1]


# ---------------------------------------------------------------- sentences a reader can follow

# The report aims at sentences under about 40 words; none of its prose may run past this.  Lists of sizes or models
# inside a sentence count too; tables, headings and code do not.
MAX_SENTENCE_WORDS = 45


def sentences(markdown: str) -> list[str]:
    """MARKDOWN's prose split into sentences (at '.', '!', '?' or ';' and a space, after any closing emphasis), each
    code span counted as one word, without its tables, headings, code blocks and rules."""
    found = []
    for block in re.split(r"\n\s*\n", markdown):
        lines = [line for line in block.splitlines() if not line.startswith(("|", "    ", "```", "#", "----"))]
        text = re.sub(r"`[^`]*`", "code", " ".join(lines))
        found += [sentence for sentence in re.split(r"(?<=[.!?;])[*_]*\s+", text) if sentence.split()]
    return found


def test_sentences_are_short_enough_to_follow():
    """Every golden text is what the report prints (the tests above hold them equal): no sentence of it runs past
    MAX_SENTENCE_WORDS words."""
    long = [
        f"{golden.name}: {len(sentence.split())} words: {sentence}"
        for golden in (GOLDEN, GOLDEN_SERVERS, GOLDEN_OPEN_LOAD)
        for sentence in sentences(golden.read_text())
        if len(sentence.split()) > MAX_SENTENCE_WORDS
    ]
    assert not long, "sentences too long to follow:\n" + "\n".join(long)
    assert len(sentences("One. Two words; three *more?* Four `a b c` five.")) == 4


# ---------------------------------------------------------------- the golden answers' numbers and the tables

THROUGHPUT = "throughput_gbps"
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}
# How a crossover sentence of the copies report (experiments/copies/answers/crossovers.py) says each status.
_STATUS_WORDS = {
    "crossover": r"outperforms `\w+` above about \*\*",
    "challenger_always_better": r"outperforms `\w+` at every size where they differ significantly, tested from",
    "challenger_never_better": r"never outperforms",
    "indistinguishable": r"are indistinguishable",
    "multiple_crossings": r"there is no single size",
    # the model's own (copylab.report.prose.model_clause)
    "equivalent": r"\*\*equivalent\*\* at every size",
    "undecided": r"\*\*undecided\*\* from",
}
# Question 4's short answer, a clause per thread count
# (copylab.report.experiments.copies.answers.crossovers._short_status)
_SHORT_WORDS = {
    "crossover": r"faster from about ([\d,]+) B \(95% CI ([\d,]+) B to ([\d,]+) B\)",
    "challenger_always_better": r"faster at every size (?:from|where the two differ)",
    "challenger_never_better": r"(?:slower at every size from|never faster)",
    "indistinguishable": r"indistinguishable at every size",
    "multiple_crossings": r"no single crossover",
    "equivalent": r"\*\*equivalent\*\* at every size",
    "undecided": r"\*\*undecided\*\* from",
}


def _section(text: str, heading: str) -> str:
    """The text under the heading '## HEADING', up to the next separator."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n----\n", start)
    return text[start : end if end >= 0 else len(text)]


def _size(text: str) -> int:
    number, unit = re.fullmatch(r"([\d,]+)\s(B|KiB|MiB)", text.strip()).groups()  # type: ignore[union-attr]
    return int(number.replace(",", "")) * _UNITS[unit]


def _close(written: str, value: float) -> bool:
    """Whether WRITTEN (a number as the report prints it: about three significant digits) is VALUE."""
    return math.isclose(float(written.replace(",", "")), value, rel_tol=5e-3, abs_tol=1e-12)


def _tables(directory: Path) -> dict[str, pd.DataFrame]:
    tables = {name: pd.read_csv(directory / f"{name}.csv") for name in ("summary", "comparisons", "crossovers")}
    tables["trials"] = pd.read_csv(REFERENCE_DATA / "trials.csv", low_memory=False)
    return tables


def _check_crossover_answer(text: str, tables: dict[str, pd.DataFrame], challenger: str) -> int:
    """Each bullet's configuration, status, crossover size and interval and tested range, and the short answer's
    counts, against crossovers.csv and summary.csv; returns how many numbers and words were checked."""
    crossovers, summary = tables["crossovers"], tables["summary"]
    rows = crossovers[
        (crossovers["challenger"] == challenger)
        & (crossovers["baseline"] == "two_copy")
        & (crossovers["metric"] == THROUGHPUT)
        & (crossovers["workload"] == "stream")
    ]
    # question 5 gives a block of bullets per sender and path: these tables are the veth's
    heading = rf"\*\*`{challenger}` against `two_copy`, over the veth\.\*\*"
    block = re.search(rf"{heading}\n\n(.*?)(?:\n\n\*\*|\Z)", text, re.S)
    bullets = [line[2:] for line in (block[1] if block else text).splitlines() if line.startswith("- ")]
    assert rows.shape[0] == len(bullets) > 0, (len(rows), bullets)
    checked = 0
    for bullet in bullets:
        threads, pinning = re.match(r"With (\d+) threads?, CPU pinning `([^`]+)`, ", bullet).groups()  # type: ignore[union-attr]
        row = rows[(rows["threads"] == int(threads)) & (rows["pinning"] == pinning)]
        assert len(row) == 1, bullet
        row = row.iloc[0]
        said = [status for status, words in _STATUS_WORDS.items() if re.search(words, bullet)]
        assert said == [row["status"]], (bullet, row["status"])
        checked += 1
        if row["status"] == "crossover":
            at, kib, low, high = re.search(  # type: ignore[union-attr]
                r"above about \*\*([\d,]+) B\*\* \(([\d.,]+) KiB; 95% CI ([\d,]+) B to ([\d,]+) B\)", bullet
            ).groups()
            assert [int(v.replace(",", "")) for v in (at, low, high)] == [
                round(row[c]) for c in ("crossover_at", "ci_low", "ci_high")
            ], bullet
            assert _close(kib, row["crossover_at"] / 1024), bullet
            checked += 4
        tested = summary[
            (summary["workload"] == "stream")
            & (summary["metric"] == THROUGHPUT)
            & (summary["threads"] == int(threads))
            & (summary["pinning"] == pinning)
        ]["size_bytes"]
        span = re.search(r"(?:range of|tested|from) ([\d,]+ (?:B|KiB|MiB)) to ([\d,]+ (?:B|KiB|MiB))", bullet)
        assert span and (_size(span[1]), _size(span[2])) == (tested.min(), tested.max()), (bullet, span)
        checked += 2
    short = text.split("\n", 3)[2]
    assert short.startswith("**Claim.**"), short
    if "Over the veth" in short:  # question 5, answered over the veth and behind the sink
        return checked + _check_veth_short(short, rows, tables["trials"], challenger)
    clauses = re.findall(r"with (\d+) threads?, CPU pinning `([^`]+)`, (.*?)(?=; with|\.\Z)", short)
    assert len(clauses) == len(rows), (short, len(rows))
    for threads, pinning, clause in clauses:
        row = rows[(rows["threads"] == int(threads)) & (rows["pinning"] == pinning)].iloc[0]
        said = [status for status, words in _SHORT_WORDS.items() if re.search(words, clause)]
        assert said == [row["status"]], (clause, row["status"])
        checked += 1
        if row["status"] == "crossover":
            at, low, high = re.search(_SHORT_WORDS["crossover"], clause).groups()  # type: ignore[union-attr]
            assert [int(v.replace(",", "")) for v in (at, low, high)] == [
                round(row[c]) for c in ("crossover_at", "ci_low", "ci_high")
            ], clause
            checked += 3
    return checked


# Question 5's short answer, a clause per status over the veth (copylab.report.experiments.copies.answers.sink)
_CLAUSE_WORDS = {
    "crossover": r"`\w+` against `\w+`: better from about",
    "challenger_always_better": r"`\w+` against `\w+`: better at every size from",
    "challenger_never_better": r"`\w+` against `\w+`: never better",
    "indistinguishable": r"`\w+` against `\w+`: not distinguishable at any size from",
    "multiple_crossings": r"`\w+` against `\w+`: better at some sizes from",
    "equivalent": r"`\w+` against `\w+`: \*\*equivalent\*\*",
    "undecided": r"`\w+` against `\w+`: \*\*undecided\*\*",
}


def _check_veth_short(short: str, rows: pd.DataFrame, trials: pd.DataFrame, challenger: str) -> int:
    """Question 5's sentence over the veth: the thread counts of each status, and the share of the sends copied and
    how many completed, against crossovers.csv and trials.csv."""
    veth = re.search(r"Over the veth, (.*?)\. There the kernel copied ([\d.]+)% of its ([\d,]+) completed sends", short)
    assert veth, short
    checked = 0
    for status, words in _CLAUSE_WORDS.items():
        threads = sorted(int(t) for t in rows[rows["status"] == status]["threads"])
        # a status may take several clauses (the model's misfit, one per p-value)
        said = re.findall(rf"with ([\d, and]+?) threads?, {words}", veth[1])
        if len(rows) == 1:
            assert bool(re.search(words, veth[1])) == bool(threads), (status, veth[1])
        else:
            assert sorted(int(t) for clause in said for t in re.findall(r"\d+", clause)) == threads, (status, veth[1])
        checked += 1
    # the study's message layout, as every section but the one on layouts
    sends = trials[
        (trials["implementation"] == challenger) & (trials["status"] == "ok") & (trials["layout"] == "fields")
    ]
    assert int(veth[3].replace(",", "")) == sends["zc_completed"].sum()
    assert _close(veth[2], 100 * sends["zc_copied"].sum() / sends["zc_completed"].sum())
    return checked + 2


def _check_ratio_table(text: str, tables: dict[str, pd.DataFrame]) -> int:
    """The zero-copy answer's ratio table and its count of sizes faster and slower, against comparisons.csv."""
    comparisons = tables["comparisons"]
    threads, pinning, workload = re.search(  # type: ignore[union-attr]
        r"`zero_copy` / `two_copy` \((\d+) threads?, CPU pinning `([^`]+)`, (\w+)\)", text
    ).groups()
    rows = comparisons[
        (comparisons["challenger"] == "zero_copy")
        & (comparisons["baseline"] == "two_copy")
        & (comparisons["metric"] == THROUGHPUT)
        & (comparisons["workload"] == workload)
        & (comparisons["threads"] == int(threads))
        & (comparisons["pinning"] == pinning)
    ].set_index("size_bytes")
    lines = [line for line in text.splitlines() if re.match(r"\| [\d,]+\s(B|KiB|MiB) \|", line)]  # a no-break space
    assert len(lines) == len(rows) > 0
    verdicts = []
    for line in lines:
        size, ratio, interval, p, verdict = (cell.strip() for cell in line.strip("|").split("|"))
        row = rows.loc[_size(size)]
        low, high = re.split(r",\s+", interval.strip("[]"))  # the bounds are joined by a no-break space
        assert _close(ratio, row["ratio"]) and _close(low, row["ratio_ci_low"]) and _close(high, row["ratio_ci_high"])
        assert row["p_holm"] < 0.001 if p == "<0.001" else _close(p, row["p_holm"]), (line, row["p_holm"])
        expected = ("faster" if row["challenger_better"] else "slower") if row["significant"] else "not significant"
        assert verdict == expected, (line, expected)
        verdicts.append(verdict)
    faster, of, slower = re.search(  # type: ignore[union-attr]
        r"significantly faster at (\d+) of (\d+) sizes, significantly slower at (\d+)", text
    ).groups()
    assert (int(faster), int(of), int(slower)) == (verdicts.count("faster"), len(rows), verdicts.count("slower"))
    return 5 * len(lines) + 3


def _check_zero_copy_counts(text: str, tables: dict[str, pd.DataFrame]) -> int:
    """The share of zero-copy sends flagged COPIED and how many completed, against trials.csv."""
    share, completed = re.search(r"flagged ([\d.]+)% of ([\d,]+) completed zero-copy sends", text).groups()  # type: ignore[union-attr]
    trials = tables["trials"]
    sends = trials[
        (trials["implementation"] == "zero_copy") & (trials["status"] == "ok") & (trials["layout"] == "fields")
    ]
    assert int(completed.replace(",", "")) == sends["zc_completed"].sum()
    assert _close(share, 100 * sends["zc_copied"].sum() / sends["zc_completed"].sum())
    return 2


def _check_limitations(text: str, tables: dict[str, pd.DataFrame]) -> int:
    """The counts of trials, configurations flagged unstable and trials per configuration, against trials.csv and
    summary.csv."""
    trials, summary = tables["trials"], tables["summary"]
    completed = re.search(r"All (\d+) trials completed; none failed", text)
    assert completed and int(completed[1]) == len(trials) and (trials["status"] == "ok").all()
    main = summary[
        ((summary["workload"] == "stream") & (summary["metric"] == THROUGHPUT))
        | ((summary["workload"] == "rr") & (summary["metric"] == "latency_mean_us"))
    ].dropna(subset=["mean"])
    main = main[main["layout"].isin(["fields", "none"])]  # the study's message layout, as the report's sections
    unstable, configurations = re.search(
        r"(\d+) of (\d+) configurations(?: \([^)]*\))? were flagged unstable", text
    ).groups()  # type: ignore[union-attr]
    assert (int(unstable), int(configurations)) == (int(main["unstable"].sum()), len(main))
    cv = re.search(r"reached a CV of ([\d.]+)%", text)
    assert cv and _close(cv[1], 100 * main.loc[main["unstable"], "cv"].max())
    each = re.search(r"Each configuration rests on (\d+)(?: to (\d+))? successful trials", text)
    assert each and (int(each[1]), int(each[2] or each[1])) == (main["n"].min(), main["n"].max())
    return 6


def test_the_golden_answers_numbers_are_the_analysis_tables(copies_reference):
    """Each number of the golden copies report's answers (Part E) is read back from the text and found in the tables
    the reference's analysis writes: a regenerated golden text that misstates one fails here."""
    tables = _tables(copies_reference[1])
    golden = GOLDEN.read_text()
    checked = _check_crossover_answer(
        _section(golden, "At what message size does one-copy outperform two-copy on this system?"), tables, "one_copy"
    )
    checked += _check_crossover_answer(
        _section(golden, "At what message size does zero-copy outperform two-copy on this system?"), tables, "zero_copy"
    )
    why = _section(golden, "Why does zero-copy not always give the best throughput?")
    checked += _check_ratio_table(why, tables) + _check_zero_copy_counts(why, tables)
    checked += _check_limitations(golden.rsplit("\n----\n", 1)[1], tables)
    assert checked > 50


def regenerate(write: bool, goldens: dict[Path, Callable[[Path], str]] | None = None) -> int:
    """Composes every golden text anew and prints the unified diff of each that changed; writes them only if
    WRITE.  0: nothing differs, or written; 1: they differ and nothing was written."""
    import tempfile

    goldens = goldens or {
        GOLDEN: compose,
        GOLDEN_SERVERS: lambda scratch: compose_servers(functools.partial(_analysed, scratch)),
        GOLDEN_OPEN_LOAD: lambda scratch: compose_open_load(functools.partial(_analysed, scratch)),
    }
    changed = []
    for golden, composer in goldens.items():
        with tempfile.TemporaryDirectory() as scratch:
            text = composer(Path(scratch))
        old = golden.read_text() if golden.exists() else ""
        if text == old:
            continue
        changed.append(golden)
        name = str(golden.relative_to(ROOT)) if golden.is_relative_to(ROOT) else str(golden)
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
        sys.stdout.writelines(diff)
        if write:
            golden.write_text(text)
    if not changed:
        print("the golden texts are up to date")
        return 0
    if write:
        print(f"wrote {len(changed)} golden file(s): {', '.join(path.name for path in changed)}")
        return 0
    print(f"{len(changed)} golden file(s) differ (above); nothing written: pass --write to write them")
    return 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the golden files (after reading the diff)")
    sys.exit(regenerate(parser.parse_args().write))
