"""One home per number: every figure measured about copylab lives in docs/measured.json (docs/measured.md is
generated from it), the prose quotes a figure as a link to it and says the same number, and the numbers the README
takes from the code (the budget, the sweeps, the packages) are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from copylab import experiments, measured
from copylab.declarations.config import DESCRIPTORS_BESIDES_CONNECTIONS
from copylab.paths import ROOT
from copylab.study import REPORT_BUDGET_S
from tests.test_docs import readme_console

README = ROOT / "README.md"
# A figure quoted: [NUMBER UNIT](…measured.md "KEY")
CITATION = re.compile(r"\[([^\]]+)\]\((?:\.\./|docs/)?measured\.md\s+\"([^\"]+)\"\)")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
# What a quoted unit is in the unit a figure is recorded in.
SCALE = {("minutes", "s"): 60, ("minute", "s"): 60, ("min", "s"): 60, ("s", "s"): 1, ("seconds", "s"): 1}
SCALE |= {("MiB", "MiB"): 1, ("GiB", "MiB"): 1024, ("", ""): 1}
# A number said about how long copylab takes or how much it weighs, outside a citation: it belongs in measured.md.
UNCITED = re.compile(
    r"\b(?:takes?|took|lasts?|lasted)\s[^.\n]{0,40}?\b\d[\d.,]*\s*(?:s|seconds?|minutes?|min|hours?|MiB|GiB)\b"
    r"|\babout \d[\d.,]*\s*(?:MiB|GiB|minutes?|seconds?)\b"
)
# Pages of history (dated measurements by hand, each with its host) and generated pages are not prose to check.
NOT_PROSE = {"performance.md", "measured.md"}


def pages() -> list[Path]:
    return [README, *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in NOT_PROSE)]


def _agrees(quoted: str, figure: measured.Figure) -> bool:
    number = NUMBER.search(quoted)
    if number is None:
        return False
    text = number.group().replace(",", "")
    if isinstance(figure.value, str):  # a figure that carries its own words: its first number, as written
        first = NUMBER.search(figure.value)
        return first is not None and first.group().replace(",", "") == text
    unit = quoted[number.end() :].strip().split(" ")[0]
    scale = SCALE.get((unit, figure.unit))
    if scale is None:
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(figure.value / scale, decimals) == float(text)


def disagreements(text: str, figures: dict[str, measured.Figure]) -> list[str]:
    """Each citation in TEXT whose key is not recorded or whose number is not the recorded one."""
    found = []
    for quoted, key in CITATION.findall(text):
        if key not in figures:
            found.append(f"{key}: no such figure in docs/measured.json")
        elif not _agrees(quoted, figures[key]):
            found.append(f"{key}: the prose says {quoted!r}, docs/measured.json {measured.shown(figures[key])}")
    return found


def uncited(text: str) -> list[str]:
    """Numbers about copylab's time or size said outside a citation and outside code."""
    prose = CITATION.sub("", re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S))
    prose = "\n".join(line for line in prose.splitlines() if not line.startswith("    "))
    return [match.group() for match in UNCITED.finditer(prose)]


def test_the_page_is_generated_from_the_record():
    assert measured.PAGE.read_text() == measured.page(measured.load()), (
        "run: python -m copylab.measured > docs/measured.md"
    )


@pytest.mark.parametrize("page", [*pages(), ROOT / "docs" / "performance.md"], ids=lambda page: page.name)
def test_every_quoted_figure_is_the_recorded_one(page):
    assert disagreements(page.read_text(), measured.load()) == []


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_no_figure_about_copylab_is_said_outside_the_record(page):
    assert uncited(page.read_text()) == []


def test_an_edited_number_is_caught():
    figures = {"report_s": measured.Figure(330, "s", "x", "./inv report", "2026-11-28T00:00:00Z", "h", "c")}
    assert disagreements('takes [5.5 minutes](docs/measured.md "report_s")', figures) == []
    assert disagreements('takes [330 s](measured.md "report_s")', figures) == []
    assert len(disagreements('takes [5 minutes](docs/measured.md "report_s")', figures)) == 1
    assert len(disagreements('takes [5.5 minutes](docs/measured.md "report_t")', figures)) == 1
    bench = {"a / b": measured.Figure("4.91x (median of 5 pairs)", "", "a / b", "./inv bench", "d", "h", "c")}
    assert disagreements('[4.91x](measured.md "a / b")', bench) == []
    assert len(disagreements('[4.19x](measured.md "a / b")', bench)) == 1
    assert uncited("`./inv report` takes about 5.5 minutes on 2 CPUs") != []
    assert uncited("it takes about 25 MiB") != []
    assert uncited('`./inv report` takes [about 5.5 minutes](docs/measured.md "report_s")') == []


def test_a_goal_missed_is_shown_missed():
    missed = measured.Figure("6.1 min", "", "./inv report", "./inv bench", "d", "h", "c", goal="<= 5.5 min", met=False)
    assert "**missed**" in measured.page({"./inv report": missed})


def test_the_readme_says_the_code_s_budget_sweeps_and_packages():
    text = README.read_text()
    assert f"{REPORT_BUDGET_S:g} s of measuring" in text
    console = readme_console()
    sweeps = [line for line in console if line.startswith("Sweep ")]
    assert len(sweeps) == len(experiments.reported())
    first_pass = next(line for line in console if "the first passes of" in line)
    assert f"the first passes of {len(sweeps)} sweeps" in first_pass
    assert f"of the {REPORT_BUDGET_S:g} s budget" in first_pass
    inv = (ROOT / "inv").read_text()
    array = re.search(r"^DEBIAN_PACKAGES=\((.*?)^\)", inv, re.S | re.M).group(1)
    packages = [word for line in array.splitlines() for word in line.split("#")[0].split()]
    assert f"sudo apt-get install -y --no-install-recommends {' '.join(packages)}\n" in text


def test_the_descriptors_the_programs_page_says_are_the_code_s():
    assert f"C + {DESCRIPTORS_BESIDES_CONNECTIONS}." in (ROOT / "docs" / "programs.md").read_text()


def test_a_run_records_only_when_asked(tmp_path, monkeypatch):
    record, page = tmp_path / "measured.json", tmp_path / "measured.md"
    figure = measured.figure(12.5, "s", "./inv calibrate", "./inv calibrate")
    monkeypatch.delenv(measured.RECORDING, raising=False)
    measured.record({"calibration_s": figure}, record, page)
    assert not record.exists() and not page.exists()
    monkeypatch.setenv(measured.RECORDING, "1")
    measured.record({"calibration_s": figure}, record, page)
    measured.record({"test_s": measured.figure(700, "s", "./inv test", "./inv test")}, record, page)
    kept = measured.load(record)
    assert kept["calibration_s"].value == 12.5 and kept["test_s"].value == 700  # one run's figures keep the other's
    assert page.read_text() == measured.page(kept)
    assert kept["test_s"].host == measured.this_host() and kept["test_s"].commit


def test_the_suite_s_counts_are_those_its_sessions_left(tmp_path, monkeypatch):
    from copylab.cli import measuring

    monkeypatch.setattr(measuring, "OUTCOMES", tmp_path)
    (tmp_path / "outcomes-1-10.json").write_text('{"passed": 700, "failed": 0, "skipped": 12}')
    (tmp_path / "outcomes-1-11.json").write_text('{"passed": 40, "failed": 1, "skipped": 0}')
    figures = measuring._test({"k": None, "passed_on": []}, 725.0, started=0.0)
    assert figures["test_s"].value == 725
    assert (figures["tests_passed"].value, figures["tests_failed"].value, figures["tests_total"].value) == (740, 1, 753)
    assert measuring._test({"k": "servers", "passed_on": []}, 10.0, started=0.0) == {}
