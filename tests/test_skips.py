"""A skip is allowed only for a reason tests/skips.py declares: under CI=true any other fails the run, named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from copylab.paths import ROOT

CASES = """
import pytest

pytest.importorskip("{module}")


def test_runs():
    assert True


def test_without_netem():
    pytest.skip("this kernel has no netem (tc: Error: Specified qdisc kind is unknown)")


{extra}
"""
UNDECLARED = """
def test_undeclared():
    pytest.skip("the moon is full")
"""
ROOT_ONLY = """
@pytest.mark.skipif(True, reason="network namespaces need root")
def test_needs_root():
    pass
"""


def _run(tmp_path: Path, extra: str, ci: bool, *options: str, module: str = "json") -> subprocess.CompletedProcess[str]:
    """pytest on a module of made-up cases, with the project's skip check and its strict markers."""
    (tmp_path / "conftest.py").write_text("from tests.skips import pytest_configure  # noqa: F401\n")
    (tmp_path / "test_cases.py").write_text(CASES.format(module=module, extra=extra))
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env.update({"PYTHONPATH": str(ROOT), **({"CI": "true"} if ci else {})})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--strict-markers", *options],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("options", [(), ("-n", "2", "--dist", "loadfile")], ids=["serial", "xdist"])
def test_under_ci_an_undeclared_skip_fails_the_run_and_is_named(tmp_path, options):
    result = _run(tmp_path, UNDECLARED, True, *options)
    assert result.returncode == 1, result.stdout
    assert "CI=true: 1 skipped for a reason CI must not meet" in result.stdout
    assert "test_cases.py::test_undeclared: the moon is full (undeclared)" in result.stdout
    assert "test_without_netem" not in result.stdout.split("CI=true:")[1], "a declared reason CI may meet passes"


def test_under_ci_a_declared_reason_ci_never_meets_fails_the_run(tmp_path):
    result = _run(tmp_path, ROOT_ONLY, True)
    assert result.returncode == 1, result.stdout
    assert "test_cases.py::test_needs_root: network namespaces need root (CI is never such a host" in result.stdout


def test_under_ci_a_module_skipped_for_an_undeclared_reason_fails_the_run(tmp_path):
    result = _run(tmp_path, "", True, module="no_such_module_here")
    assert result.returncode == 1, result.stdout
    assert "could not import 'no_such_module_here'" in result.stdout and "(undeclared)" in result.stdout


def test_under_ci_declared_skips_and_passes_exit_0(tmp_path):
    result = _run(tmp_path, "", True)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 1 skipped" in result.stdout


def test_outside_ci_an_undeclared_skip_is_named_and_the_run_passes(tmp_path):
    result = _run(tmp_path, UNDECLARED + ROOT_ONLY, False)
    assert result.returncode == 0, result.stdout
    assert "1 skipped for a reason tests/skips.py does not declare" in result.stdout
    assert "test_cases.py::test_undeclared: the moon is full (undeclared)" in result.stdout


def test_a_misspelt_mark_is_an_error(tmp_path):
    result = _run(tmp_path, "@pytest.mark.serail\ndef test_marked():\n    pass\n", False)
    assert result.returncode != 0 and "'serail' not found in `markers`" in result.stdout + result.stderr


def test_what_cannot_run_here_is_counted_before_the_run(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES.format(module="json", extra=ROOT_ONLY))
    line = subprocess.run(
        [sys.executable, "-m", "tests.skips", "-p", "no:cacheprovider", str(tmp_path / "test_cases.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # the netem skip is only known once its test runs: counted are the skips known before
    assert line == "copylab: 1 of 3 tests cannot run here and will skip: 1 need root\n"


def test_without_root_the_tests_of_the_namespace_fixtures_are_counted(tmp_path):
    uses_pair = "@pytest.fixture\ndef pair():\n    pass\n\n\ndef test_in_namespaces(pair):\n    pass\n"
    (tmp_path / "test_cases.py").write_text(CASES.format(module="json", extra=ROOT_ONLY + uses_pair))
    unprivileged = (
        "import os, sys; os.geteuid = lambda: 1000; from tests import skips; print(skips.cannot_run(sys.argv[1:]))"
    )
    line = subprocess.run(
        [sys.executable, "-c", unprivileged, "-p", "no:cacheprovider", str(tmp_path / "test_cases.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert line == "2 of 4 tests cannot run here and will skip: 2 need root\n"
