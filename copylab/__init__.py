"""copylab: what data movement costs in Linux network I/O."""

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """copylab's version as pyproject.toml declares it (its one home), read from the installed package's metadata."""
    try:
        return version("copylab")
    except PackageNotFoundError:  # run from a checkout that was never installed (./inv always installs it)
        return "unknown (not installed: run ./inv once)"
