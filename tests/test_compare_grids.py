"""./inv compare refuses, in one line, two sweeps of different grids or methods (read from their manifests), unless
told --shared-only, which compares what they share and says what was left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from copylab.cli.main import main
from copylab.errors import CopylabError
from copylab.paths import REFERENCE_MMAP_DATA
from copylab.record.grids import GRID, METHOD, comparable
from copylab.record.store import SweepStore


def _copy(tmp_path: Path, name: str, **changed: object) -> Path:
    """A copy of a committed sweep, its manifest's parameters CHANGED."""
    directory = tmp_path / name
    shutil.copytree(REFERENCE_MMAP_DATA, directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["parameters"].update(changed)
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def _parameters(directory: Path):
    return SweepStore(directory).read_manifest().parameters


def test_every_setting_named_is_one_of_the_sweep_settings():
    from copylab.declarations import settings

    assert set(GRID + METHOD) <= set(settings.BY_NAME)


def test_sweeps_of_one_grid_and_method_are_compared_without_a_word(tmp_path):
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b", seed=7, namespaces=["s2", "c2"])
    assert comparable(_parameters(a), _parameters(b), ("a", "b"), shared_only=False) is None


@pytest.mark.parametrize(
    "changed, said",
    [
        ({"sizes": [65536, 262144, 1048576]}, "on different grids: sizes 64KiB,256KiB against 64KiB,256KiB,1MiB"),
        ({"warmup_s": 0.2}, "by different methods: warmup_s 0.1 s against 0.2 s"),
        ({"threads": [1, 2], "duration_s": 0.5}, "on different grids and by different methods"),
    ],
)
def test_a_planted_mismatch_is_refused_in_one_line(tmp_path, capsys, changed, said):
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b", **changed)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("copylab: error: ") and said in error, error
    assert "--shared-only" in error
    assert not (tmp_path / "out").exists()


def test_shared_only_says_what_was_left_out_and_which_method_differs(tmp_path):
    a = _copy(tmp_path, "a")
    b = _copy(tmp_path, "b", sizes=[65536, 1048576], warmup_s=0.3)
    said = comparable(_parameters(a), _parameters(b), ("a", "b"), shared_only=True)
    assert said == (
        "copylab: comparing only the configurations both sweeps hold; left out: sizes 256KiB only in A, sizes 1MiB "
        "only in B; measured differently: warmup_s 0.1 s against 0.3 s"
    )
    with pytest.raises(CopylabError):
        comparable(_parameters(a), _parameters(b), ("a", "b"), shared_only=False)
