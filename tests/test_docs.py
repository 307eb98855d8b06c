"""What a newcomer reads holds: the messages docs/troubleshooting.md quotes can still be printed, and the console
lines the README shows are today's format."""

from __future__ import annotations

import ast
import itertools
import json
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from copylab import error_catalogue
from copylab.cli import reference, troubleshooting
from copylab.cli.parsing import default_text, limits_text
from copylab.declarations import contract, implementations
from copylab.declarations.settings import SETTINGS
from copylab.paths import ROOT
from tests.test_error_catalogue import CATALOGUE, raised_entries

TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
# Where copylab's messages are written: its package, the task file, the ./inv wrapper and the C programs.
SOURCES = (ROOT / "copylab", ROOT / "tasks.py", ROOT / "inv", ROOT / "csrc")
PREFIXES = ("copylab: error: ", "copylab: warning: ", "copylab: ")
# A template must hold this many characters of its own text besides a prefix above: "copylab: error: {error}"
# would match any line.
LEAST_LITERAL = 12
VARIABLE = None  # a part of a template filled in when the message is printed
FORMAT_FIELD = re.compile(r"\{\w+(?:![rs])?\}")


def _python_template(node: ast.AST) -> list[str | None] | None:
    """The parts of the string NODE builds (an f-string, a literal, literals and values joined by +)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # a str.format template (copylab.error_catalogue's messages): its fields are filled in when it is printed
        parts: list[str | None] = []
        for index, literal in enumerate(FORMAT_FIELD.split(node.value)):
            parts += ([VARIABLE] if index else []) + [literal]
        return parts
    if isinstance(node, ast.JoinedStr):
        return [part.value if isinstance(part, ast.Constant) else VARIABLE for part in node.values]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _python_template(node.left), _python_template(node.right)
        if left is None and right is None:
            return None
        return [*(left or [VARIABLE]), *(right or [VARIABLE])]
    return None


def _python_templates(path: Path) -> list[list[str | None]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        template = _python_template(node)
        if template is not None:
            found.append(template)
    return found


C_STRINGS = re.compile(r'"((?:[^"\\\n]|\\.)*)"((?:\s*"(?:[^"\\\n]|\\.)*")*)')
C_FORMAT = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXfFeEgGcsp]")


def _c_templates(path: Path) -> list[list[str | None]]:
    """Each string of a C file (adjacent literals joined), its printf conversions variable."""
    found = []
    for match in C_STRINGS.finditer(path.read_text()):
        text = match.group(1) + "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', match.group(2)))
        text = text.replace("\\n", "").replace('\\"', '"')
        parts: list[str | None] = []
        for index, literal in enumerate(C_FORMAT.split(text)):
            parts += ([VARIABLE] if index else []) + [literal]
        found.append(parts)
    return found


def _shell_templates(path: Path) -> list[list[str | None]]:
    """Each double-quoted string of a shell script, its expansions variable."""
    found = []
    for text in re.findall(r'"((?:[^"\\]|\\.)*)"', path.read_text()):
        parts: list[str | None] = []
        for index, literal in enumerate(re.split(r"\$\{[^}]*\}|\$\w+", text)):
            parts += ([VARIABLE] if index else []) + [literal]
        found.append(parts)
    return found


def _literal_length(template: list[str | None]) -> int:
    text = "".join(part for part in template if part is not VARIABLE)
    for prefix in PREFIXES:
        if text.startswith(prefix):
            return len(text) - len(prefix)
    return len(text)


@cache
def templates() -> list[re.Pattern[str]]:
    """Every message the code can print, as a pattern its variable parts match anything in."""
    # the catalogue's errors that some module raises: a catalogued message nobody raises cannot be printed
    raised = [error_catalogue.entries()[name].message for name in raised_entries()]
    found: list[list[str | None]] = [_python_template(ast.Constant(message)) or [] for message in raised]
    for source in SOURCES:
        for path in sorted(source.rglob("*") if source.is_dir() else [source]):
            if path.is_relative_to(CATALOGUE):
                continue
            if path.suffix == ".py":
                found += _python_templates(path)
            elif path.suffix in (".c", ".h"):
                found += _c_templates(path)
            elif path.name == "inv":
                found += _shell_templates(path)
    return [
        re.compile("".join(".*?" if part is VARIABLE else re.escape(part) for part in template), re.S)
        for template in found
        if _literal_length(template) >= LEAST_LITERAL
    ]


def printable(message: str) -> bool:
    """Whether some template of the code prints MESSAGE, with or without copylab's one-line prefix, or it is the
    sample of a catalogued error some module raises (one with too little text of its own to be searched for,
    "{path}: {error}", is known by its sample)."""
    candidates = [message] + [message.removeprefix(prefix) for prefix in PREFIXES if message.startswith(prefix)]
    if message in raised_samples():
        return True
    return any(pattern.fullmatch(candidate) for candidate in candidates for pattern in templates())


@cache
def raised_samples() -> frozenset[str]:
    """The sample line of every catalogued error some module raises: made once, as finding those errors parses every
    module of the package (0.7 s, for each of the two hundred quoted messages)."""
    entries = error_catalogue.entries()
    return frozenset(troubleshooting.sample_line(name, entries[name]) for name in raised_entries())


def quoted_messages() -> list[str]:
    """The lines of docs/troubleshooting.md's ```text blocks: each a message as the user sees it."""
    blocks = re.findall(r"^```text\n(.*?)^```", TROUBLESHOOTING.read_text(), re.S | re.M)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_troubleshooting_quotes_at_least_eight_messages():
    assert len(quoted_messages()) >= 8


@pytest.mark.parametrize("message", quoted_messages(), ids=lambda message: message[:60])
def test_every_quoted_message_can_still_be_printed(message):
    assert printable(message), f"docs/troubleshooting.md quotes a message no code prints: {message}"


def test_a_message_the_code_cannot_print_is_caught():
    """Negative control: a changed word, or an invented message, matches no template."""
    assert printable("copylab: error: the server and client namespaces need different names")
    assert not printable("copylab: error: the server and client namespaces need other names")
    assert not printable("copylab: error: something went wrong")


def test_every_built_program_answers_help_with_its_usage(bin_dir):
    programs = sorted(bin_dir.iterdir())
    assert programs
    for program in programs:
        result = subprocess.run([str(program), "--help"], capture_output=True, text=True, timeout=10)
        assert result.returncode == 0, f"{program.name} --help: exit {result.returncode}: {result.stderr}"
        assert result.stdout.startswith(f"usage: {program.name}"), f"{program.name} --help: {result.stdout[:80]!r}"
        assert result.stderr == ""


@pytest.mark.parametrize(
    "role, arguments",
    [("speed_probe", []), ("memcpy_bandwidth", ["1", "1"]), ("copy_cost", ["1", "256", "4096"])],
)
def test_the_calibration_programs_print_their_declared_keys(bin_dir, role, arguments):
    """The smallest run of each: what docs/reference/programs.md lists is what they print."""
    result = subprocess.run([str(bin_dir / role), *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    contract.parse(role, result.stdout)


def test_the_sample_output_is_a_client_result_of_today():
    assert list(json.loads(reference.CLIENT_SAMPLE)) == [key.name for key in contract.RESULTS["client"]]
    contract.parse("client", reference.CLIENT_SAMPLE)


def test_every_option_row_has_a_default():
    rows = [line for line in reference.options_page().splitlines() if line.startswith("| `--")]
    assert rows
    for row in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert cells[1], f"no default: {row}"


def test_run_sweep_help_shows_each_settings_default_and_limits():
    from copylab.cli.main import parser

    text = " ".join(parser()._subparsers._group_actions[0].choices["run-sweep"].format_help().split())
    for setting in SETTINGS:
        if setting.option is None:
            continue
        said = [f"default: {default_text(setting)}", *filter(None, [limits_text(setting)])]
        assert "; ".join(said) in text, f"--{setting.option}: {'; '.join(said)}"


README = ROOT / "README.md"
# The lines of a run the README shows: SweepResult.summary's, and the report task's last line.
SWEEP_LINE = re.compile(r"Sweep [\w.-]+: \d+ trials run \(\d+ ok, \d+ failed\) of \d+ planned in \d+ s; .*")
REPORT_LINE = re.compile(r"report: \S+/report\.pdf \(and as a web page: \S+/report\.html\)")


def readme_console() -> list[str]:
    """The lines of the README's sample run: the indented block that opens with `$ ./inv report`."""
    lines = README.read_text().splitlines()
    start = lines.index("    $ ./inv report")
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        block.append(line.removeprefix("    "))
    return block


def test_the_readme_shows_a_good_run_as_today_s_code_prints_it():
    console = readme_console()
    assert any(SWEEP_LINE.fullmatch(line) for line in console), "no sweep summary line"
    assert REPORT_LINE.fullmatch(console[-1]), f"the run does not end with the report's line: {console[-1]}"
    for line in console:
        assert printable(line), f"README.md shows a console line no code prints: {line}"


def test_the_readme_names_what_a_newcomer_needs():
    text = README.read_text()
    for needed in ("./inv compare", "--author", "--title", "--server-host", "Answers at a glance"):
        assert needed in text, needed
    render = next(line for line in text.splitlines() if line.strip().startswith("./inv report --data data/reference"))
    named = set(render.split("--data", 1)[1].strip().split(","))
    committed = {f"data/{path.parent.name}" for path in (ROOT / "data").glob("reference*/manifest.json")}
    assert named == committed, f"the reference render names {sorted(named)}; committed: {sorted(committed)}"


def _reference_hosts() -> str:
    hosts = [json.loads(path.read_text())["host"] for path in (ROOT / "data").glob("reference*/manifest.json")]
    return " ".join(f"{host['cpu_model']} {host['virtualization']}" for host in hosts).lower()


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("**/*.md"))], ids=lambda p: p.name)
def test_no_page_describes_the_references_host_otherwise_than_their_manifests(page):
    """A paragraph about the references that names a CPU or hypervisor names one their manifests record."""
    hosts = _reference_hosts()
    for paragraph in page.read_text().split("\n\n"):
        if not any(about in paragraph.lower() for about in ("data/reference", "reference sweep", "references")):
            continue
        for word in ("KVM", "EPYC", "Xeon", "docker"):
            if word in paragraph and word.lower() not in hosts:
                pytest.fail(f"{page.name}: says {word} of the references, whose manifests record: {hosts}")


def test_docs_sweeps_names_every_declared_profile():
    from copylab.experiments import EXPERIMENTS

    section = (ROOT / "docs" / "sweeps.md").read_text().split("## Profiles", 1)[1].split("\n## ", 1)[0]
    for experiment in EXPERIMENTS.values():
        for profile in experiment.profiles:
            named = re.search(rf"`[^`]*(?<![\w-]){re.escape(profile)}(?![\w-])[^`]*`", section)
            assert named, f"docs/sweeps.md: Profiles does not name {experiment.name}'s {profile}"


def test_license_citation_and_changelog_say_what_a_user_needs():
    assert "MIT License" in (ROOT / "LICENSE").read_text() and "the copylab authors" in (ROOT / "LICENSE").read_text()
    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", citation, re.M) and re.search(r"^license: MIT$", citation, re.M)
    message = citation.split("\nmessage:", 1)[1].split("\ntitle:", 1)[0]
    assert "trials_sha256" in message and "commit" in message
    # every section is a version and its date (tests/test_version.py holds them to pyproject.toml's version)
    sections = re.findall(r"^## .*$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert sections and all(re.fullmatch(r"## \d+\.\d+\.\d+ \(\d{4}-\d{2}-\d{2}\)", line) for line in sections)


def test_every_manifest_field_says_what_it_holds():
    rows = [line for line in reference.manifest_page().splitlines() if line.startswith("| `")]
    assert rows
    for row in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert cells[2], f"docs/reference/manifest.md: no meaning for {cells[0]} (comment its field)"


def _table_names(page: Path, header: str) -> list[str]:
    """The names in the first column of PAGE's table whose header row starts with HEADER."""
    lines = page.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(header))) + 2
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    return [match[1] for row in rows if (match := re.match(r"\| `(\w+)` \|", row))]


def _section(page: Path, title: str) -> str:
    """The text of PAGE's section TITLE (its heading's line up to the next heading of its level or above)."""
    text = page.read_text()
    start = text.index(f"\n{title}\n")
    level = title.split(" ")[0]
    following = [text.find(f"\n{'#' * depth} ", start + 1) for depth in range(1, len(level) + 1)]
    return text[start : min([end for end in following if end > 0], default=len(text))]


@pytest.mark.parametrize(("experiment", "header"), [("copies", "| sender |"), ("servers", "| model |")])
def test_docs_programs_lists_every_implementation_of_the_registry(experiment, header):
    """Adding a sender or a model without its row, or removing one and leaving its row, fails here."""
    declared = sorted(name for name, impl in implementations.registry().items() if impl.experiment == experiment)
    assert sorted(_table_names(ROOT / "docs" / "programs.md", header)) == declared


def test_docs_architecture_names_every_sending_path_and_model_file():
    """The C section names each csrc/send_*.c and wait_*.c that exists, and no other."""
    c_section = _section(ROOT / "docs" / "architecture.md", "## The C programs")
    for kind in ("send", "wait"):
        named = set(re.findall(rf"`({kind}_\w+\.c)`", c_section))
        assert named == {path.name for path in (ROOT / "csrc").glob(f"{kind}_*.c")}, kind
