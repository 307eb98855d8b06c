"""The registry is the one place an implementation is added: a fake one, registered here, goes everywhere."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
import seaborn

from copylab import experiments
from copylab.analysis.analyze_sweep import analyze
from copylab.declarations import config, implementations
from copylab.explore.explorer import Explorer
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.record.store import SweepStore
from copylab.report import plugins, sections
from copylab.report.experiments.copies import answers, captions
from copylab.report.experiments.copies import report as copies_report
from copylab.report.experiments.copies.basics import presentation
from copylab.report.results import load_results
from copylab.vocabulary.implementation import RECEIVE_MODES, TAB10, Copies, Implementation, program_pair
from tests.conftest import needs_root
from tests.synthetic import make_trials, write_sweep

# How the report presents it, declared with it: its paragraph of Part A and its colour.
FAKE_EXPLANATION = "**fake_copy.** A test's implementation: it reuses the two_copy programs."
FAKE = Implementation(
    name="fake_copy",
    driver=program_pair("two_copy"),
    copies=Copies(sender_user=1, sender_kernel=1),
    color="#cc79a7",
    explanation=FAKE_EXPLANATION,
    baselines=("two_copy",),
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[Implementation]:
    """FAKE added the way a new implementation is: one entry in its experiment's list (its colour and paragraph in
    it), nothing else."""
    copies = experiments.main()
    extended = dataclasses.replace(copies, implementations=(*copies.implementations, FAKE))
    monkeypatch.setitem(experiments.EXPERIMENTS, copies.name, extended)
    implementations.registry.cache_clear()
    yield implementations.get(FAKE.name)
    monkeypatch.undo()
    implementations.registry.cache_clear()


def test_a_registered_implementation_is_analysed_reported_and_explored(registered, tmp_path):
    trials = make_trials(
        sweep="fake",
        implementations=("two_copy", "one_copy", "zero_copy", FAKE.name),
        sizes=(1024, 4096, 16384),
        rr_sizes=(1024,),
        threads=(1,),
        trials=3,
        shapes={FAKE.name: "better"},
    )
    calibration = {"calibration": {"memcpy_gbps": 90.0, "runs": 7, "buffer_mib": 128}}
    store = SweepStore(write_sweep(tmp_path / "data" / "fake", trials, calibration), figures_root=tmp_path / "figures")
    result = analyze(store, plugins.draw, n_resamples=100)
    assert FAKE.name in set(result.comparisons["challenger"])
    fake_vs_baseline = result.crossovers[
        (result.crossovers["challenger"] == FAKE.name)
        & (result.crossovers["metric"] == "throughput_gbps")
        & (result.crossovers["workload"] == "stream")
    ]
    assert list(fake_vs_baseline["status"]) == ["challenger_always_better"]
    # Not a variant of the study: it appears among every sender, not in the study's figures.
    legend = [text.get_text() for text in result.figures["senders_vs_size"].legends[0].get_texts()]
    assert FAKE.name in legend
    study = [text.get_text() for text in result.figures["throughput_vs_size"].legends[0].get_texts()]
    assert FAKE.name not in study

    results = load_results(store)
    assert FAKE_EXPLANATION in copies_report.part_a(results)
    assert f"`{FAKE.name}` against `two_copy`" in sections.method(results)
    assert f"| `{FAKE.name}` | copy | 3 |" in copies_report.copy_limit(results)  # its 3 copies, from the registry
    assert f"`{FAKE.name}`" in captions.caption("senders_vs_size", results)
    assert f"**`{FAKE.name}` against `two_copy`.**" in answers.other_ways_to_send(results)
    assert FAKE.name in sections.front_matter(results, date.today())

    explorer = Explorer(store.directory, roots=[store.directory.parent])
    assert FAKE.name in explorer.selected and FAKE.name in [value for _, value in explorer.baseline.options]


def test_every_implementation_has_a_colour_and_a_paragraph():
    """The report draws each implementation in its colour and explains it in a paragraph, both declared with it
    (copylab/experiments/NAME/implementations.py): each a colour of its own in its experiment, each a paragraph that
    names it.  Each receive mode has both in the copies experiment's presentation."""
    for experiment in experiments.EXPERIMENTS.values():
        colors = [implementation.color for implementation in experiment.implementations]
        assert len(set(colors)) == len(colors), f"{experiment.name}: two implementations share a colour"
        assert all(re.fullmatch(r"#[0-9a-f]{6}", color) for color in colors), colors
    unnamed = [name for name, impl in implementations.registry().items() if f"**{name}" not in impl.explanation]
    assert unnamed == []
    missing = [
        f"receive mode {mode}: no {what} in copylab/report/experiments/copies/basics/presentation.py"
        for mode in RECEIVE_MODES
        for what, given in (("colour", presentation.RECEIVE_COLORS), ("paragraph", presentation.RECEIVE_EXPLANATIONS))
        if mode not in given
    ]
    assert missing == []


def test_the_declared_palette_is_matplotlib_s_tab10():
    assert tuple(seaborn.color_palette("tab10").as_hex()) == TAB10


def test_sweep_settings_accept_it_and_plan_its_trials(registered):
    settings = config.make_config(
        "fake",
        "quick",
        implementations=["two_copy", FAKE.name],
        workloads=["stream"],
        sizes=[1024],
        threads=[1],
        trials=2,
    )
    assert [spec.implementation.name for spec in schedule.plan(settings)].count(FAKE.name) == 2
    assert implementations.programs([registered]) == ["two_copy_server", "two_copy_client"]


@needs_root
def test_a_real_sweep_runs_it_through_its_driver(registered, tmp_path):
    tag = os.getpid() % 100000
    settings = config.make_config(
        "fake-real",
        "quick",
        implementations=[FAKE.name],
        workloads=["stream", "rr"],
        sizes=[4096],
        rr_sizes=[512],
        threads=[1],
        trials=1,
        duration_s=0.2,
        warmup_s=0.05,
        namespaces=[f"clreg{tag}_s", f"clreg{tag}_c"],
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    assert result.ok == 2 and result.failed == 0
    trials, manifest = SweepStore(tmp_path / "fake-real").load()
    assert set(trials["implementation"]) == {FAKE.name} and manifest.parameters.implementations == (FAKE.name,)
    assert trials["throughput_gbps"].gt(0).all()


# The registry's and the experiment list's answers to a name: what turns a name back into a declaration.
LOOKUPS = {
    "copylab.declarations.implementations": {
        "get",
        "experiment",
        "fixed_layout",
        "uses_zero_copy",
        "in_study",
        "parse_contender",
    },
    "copylab.experiments": {"get"},
}
# Where text comes in, and names are looked up once: the registry and the experiment list themselves, a sweep's
# settings being checked (config), a manifest or a trials file being read, and the command line.
EDGES = (
    "cli/",
    "__main__.py",
    "experiments/",
    "declarations/implementations.py",
    "declarations/config.py",
    "record/manifest.py",
    "record/trials_file.py",
)


def _lookups(source: str) -> list[str]:
    """The calls SOURCE makes that look a declaration up by name (implementations.get(...), experiments.get(...)),
    under whatever name SOURCE imported the registry or the list, or the function itself."""
    modules: dict[str, str] = {}  # the local name of the registry or the list -> its module
    functions: dict[str, str] = {}  # the local name of a lookup imported alone -> module.function
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                if whole in LOOKUPS:
                    modules[alias.asname or alias.name] = whole
                elif alias.name in LOOKUPS.get(node.module, set()):
                    functions[alias.asname or alias.name] = whole
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            module = modules.get(node.func.value.id)
            if module and node.func.attr in LOOKUPS[module]:
                found.append(f"{module.rsplit('.', 1)[1]}.{node.func.attr}")
        elif isinstance(node.func, ast.Name) and node.func.id in functions:
            found.append(".".join(functions[node.func.id].split(".")[-2:]))
    return found


def test_a_lookup_is_found_under_any_name_it_was_imported_by():
    assert _lookups("from copylab import experiments\nexperiments.get(config.experiment).calibrates\n") == [
        "experiments.get"
    ]
    aliased = "from copylab.declarations import implementations as registry\nregistry.experiment(name).axis\n"
    assert _lookups(aliased) == ["implementations.experiment"]
    alone = "from copylab.declarations.implementations import get\nget(row['implementation'])\n"
    assert _lookups(alone) == ["implementations.get"]
    assert _lookups("from copylab.declarations import implementations\nimplementations.ordered(names)\n") == []


def test_below_the_edges_nothing_looks_a_declaration_up_by_name():
    """A sweep's names are looked up once, where text comes in (EDGES): below that, the sweep carries its experiment
    and implementations (SweepConfig.declared, members, deciding), and a manifest read carries them too."""
    package = Path(implementations.__file__).parents[1]
    found = {
        relative
        for path in sorted(package.rglob("*.py"))
        if not (relative := path.relative_to(package).as_posix()).startswith(EDGES) and _lookups(path.read_text())
    }
    assert not found, "these modules look a declaration up by name: read it from what they are handed"
