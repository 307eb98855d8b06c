"""Option values as the command line gives them: comma lists, numbers and sizes with K/M suffixes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from copylab.declarations.settings import Setting
from copylab.errors import CopylabError


def parse_list(text: str | None, convert: Callable[[str], Any] = str) -> list[Any] | None:
    """'64,1K,4K' -> [64, 1024, 4096]; None stays None (= not given)."""
    if text is None:
        return None
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise CopylabError(f"empty item in the list {text!r}")
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise CopylabError(f"{text!r} is not a comma-separated list of numbers") from None


def parse_number(label: str, text: Any, convert: Callable[[str], Any]) -> Any:
    """TEXT as a number (None stays None); a one-line error naming --LABEL otherwise."""
    if text is None:
        return None
    try:
        return convert(str(text))
    except ValueError:
        raise CopylabError(f"--{label}: {text!r} is not a number") from None


def parse_size(text: str) -> int:
    """'4K' -> 4096, '1M' -> 1048576, '64' -> 64."""
    units = {"K": 1 << 10, "M": 1 << 20}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def parse_port(text: Any) -> int:
    port = parse_number("port", text, int)
    if not 1 <= port <= 65535:
        raise CopylabError(f"--port: {port} is not a port (1 to 65535)")
    return port


def setting_value(setting: Setting, given: Any) -> Any:
    """A run-sweep option's value as SETTING takes it; None when not given."""
    if setting.kind == "bool":
        return None if given in (None, setting.default) else bool(given)
    if given is None:
        return None
    convert = {"ints": int, "sizes": parse_size, "strs": str}.get(setting.kind)
    if convert is not None:
        return parse_list(given, convert)
    if setting.kind in ("int", "float"):
        return parse_number(setting.option, given, int if setting.kind == "int" else float)
    return str(given)
