"""One figure of `./inv bench` (a goal checked or a number reported), the study's budgets, and the table the
figures print as."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchFigure:
    name: str
    goal: str
    measured: str
    passed: bool | None  # None: a figure to report, not a goal


# The study's budgets (issue: the whole study within budget).
OVERHEAD_BUDGET_S = 0.1
FULL_PROFILE_BUDGET_MIN = 30
ANALYSIS_BUDGET_S = 60
REPORT_BUDGET_S = 330  # ./inv report end to end: its measuring budget (copylab.study), then analyses and PDF


def table(figures: list[BenchFigure]) -> str:
    lines = ["| figure | goal | measured | result |", "|---|---|---|---|"]
    for figure in figures:
        verdict = "-" if figure.passed is None else ("pass" if figure.passed else "FAIL")
        lines.append(f"| {figure.name} | {figure.goal} | {figure.measured} | {verdict} |")
    return "\n".join(lines)
