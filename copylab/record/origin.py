"""Where a figure's or a table's numbers come from, so that a reader can trace them: the sweep's trials.csv by
its sha256, the copylab commit that measured them and whether its working tree had uncommitted changes, and
whether the file still is what the sweep wrote.

Pure: copylab.record.store computes the digest, copylab.measure.host.provenance probes the code that draws.  A
trials.csv that no longer matches the checksum its manifest recorded is used as it is now, and said to be
modified wherever its numbers appear (a warning on the command line, a line in every caption and table that shows
them): never silently accepted, never silently refused.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from copylab.paths import ROOT
from copylab.record.manifest import Git, Manifest

SHORT = 12  # hex digits of a digest or commit in captions: enough to tell any two sweeps apart


class ModifiedData(UserWarning):
    """Data used although it no longer matches its record (a trials.csv edited after its sweep ended)."""


@dataclass(frozen=True)
class Origin:
    sweep: str
    trials_sha256: str  # of trials.csv as it is now
    recorded_sha256: str | None  # what the manifest recorded when the sweep ended; None: it did not end
    commit: str  # the copylab commit that measured the trials
    dirty: bool  # whether that commit's working tree had uncommitted changes

    @classmethod
    def of(cls, manifest: Manifest, trials_sha256: str) -> Origin:
        recorded = manifest.trials_sha256 if manifest.complete else None  # an unfinished sweep records none yet
        return cls(manifest.sweep, trials_sha256, recorded, manifest.git.commit, manifest.git.dirty)

    @property
    def modified(self) -> bool:
        return self.recorded_sha256 is not None and self.recorded_sha256 != self.trials_sha256

    def grouped_sha256(self) -> str:
        """The full digest in four groups of 16 hex digits, so that a narrow table column can wrap it."""
        return " ".join(self.trials_sha256[i : i + 16] for i in range(0, len(self.trials_sha256), 16))

    def code(self) -> str:
        return _code(self.commit[:SHORT], self.dirty)

    def stamp(self) -> str:
        """One line for a caption."""
        modified = "; modified since its sweep ended" if self.modified else ""
        return f"Data: {self.sweep}, trials.csv sha256 {self.trials_sha256[:SHORT]}{modified}; {self.code()}."

    def warning(self) -> str | None:
        if not self.modified:
            return None
        return (
            f"trials.csv has changed since sweep {self.sweep} ended (sha256 {self.trials_sha256[:SHORT]}, "
            f"the manifest recorded {str(self.recorded_sha256)[:SHORT]}): its numbers are used as they are now"
        )


def png_metadata(origins: Iterable[Origin], drawn_by: Git) -> dict[str, str]:
    """PNG text chunks naming the data and code behind a figure (matplotlib's savefig(metadata=...))."""
    origins = list(origins)
    return {
        "Software": _code(drawn_by.commit, drawn_by.dirty),
        "Source": "; ".join(
            f"{o.sweep} trials.csv sha256 {o.trials_sha256}"
            + (" (modified since its sweep ended)" if o.modified else "")
            + f", measured by {_code(o.commit, o.dirty)}"
            for o in origins
        ),
    }


def _code(commit: str, dirty: bool) -> str:
    """The copylab commit as captions and metadata name it."""
    return f"copylab {commit}" + (" with uncommitted changes" if dirty else "")


def git_state() -> Git:
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    return Git(commit=commit, dirty=bool(git("status", "--porcelain", "--untracked-files=no")))
