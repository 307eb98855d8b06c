"""copylab's version has one home, pyproject.toml: CITATION.cff, CHANGELOG.md and `copylab --version` say the same."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from copylab.paths import ROOT

HEADING = re.compile(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)$", re.M)


def changelog_versions(changelog: str) -> list[tuple[str, str]]:
    """(version, date) of each section of CHANGELOG.md, in its order."""
    return HEADING.findall(changelog)


def disagreements(pyproject: str, citation: str, changelog: str) -> list[str]:
    """Where CITATION.cff and CHANGELOG.md depart from pyproject.toml's version, or the changelog from its order."""
    declared = tomllib.loads(pyproject)["project"]["version"]
    cited = re.search(r"^version: (\S+)$", citation, re.M)
    released = re.search(r'^date-released: "?([\d-]+)"?$', citation, re.M)
    sections = changelog_versions(changelog)
    found = []
    if not cited or cited[1] != declared:
        found.append(f"CITATION.cff version {cited and cited[1]} is not pyproject's {declared}")
    if not sections or sections[0][0] != declared:
        found.append(f"CHANGELOG.md's newest section {sections and sections[0][0]} is not pyproject's {declared}")
    elif not released or released[1] != sections[0][1]:
        found.append(f"CITATION.cff date-released {released and released[1]} is not the changelog's {sections[0][1]}")
    versions = [tuple(int(part) for part in version.split(".")) for version, _ in sections]
    if versions != sorted(versions, reverse=True) or len(set(versions)) != len(versions):
        found.append("CHANGELOG.md: versions not newest first")
    if [date for _, date in sections] != sorted((date for _, date in sections), reverse=True):
        found.append("CHANGELOG.md: dates not newest first")
    return found


def _read(name: str) -> str:
    return (ROOT / name).read_text()


def test_pyproject_citation_and_changelog_give_one_version():
    assert disagreements(_read("pyproject.toml"), _read("CITATION.cff"), _read("CHANGELOG.md")) == []


def test_a_version_changed_in_one_place_is_caught():
    pyproject, citation, changelog = _read("pyproject.toml"), _read("CITATION.cff"), _read("CHANGELOG.md")
    bumped = re.sub(r'^version = "[^"]+"', 'version = "9.9.9"', pyproject, flags=re.M)
    assert len(disagreements(bumped, citation, changelog)) == 2
    cited_late = re.sub(r"^date-released: .*$", 'date-released: "2099-01-01"', citation, flags=re.M)
    assert disagreements(pyproject, cited_late, changelog) != []
    swapped = changelog.replace("## 0.1.0 (", "## 0.9.0 (")
    assert "CHANGELOG.md: versions not newest first" in disagreements(pyproject, citation, swapped)


def test_the_command_line_prints_the_installed_version():
    declared = tomllib.loads(_read("pyproject.toml"))["project"]["version"]
    for command in ([sys.executable, "-m", "copylab"], [str(Path(sys.executable).parent / "copylab")]):
        result = subprocess.run([*command, "--version"], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"copylab {declared}"
