"""Temporary directories that an interruption cannot leave behind."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def private_directory(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A fresh directory only this process uses, removed after the block however the block ends.

    Its name is chosen before it is created, so Ctrl-C arriving just after mkdir still finds it to remove
    (mkdtemp returns the name only once the directory exists: an interruption in between would leak it)."""
    directory = Path(parent or tempfile.gettempdir()) / f"{prefix}{secrets.token_hex(6)}"
    ours = True
    try:
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            ours = False  # someone else's: never removed here
            raise
        yield directory
    finally:
        if ours:
            shutil.rmtree(directory, ignore_errors=True)
