"""Option values as the command line gives them: comma lists, numbers and sizes with K/M suffixes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from copylab.declarations.settings import SETTINGS, Setting
from copylab.error_catalogue import EMPTY_LIST_ITEM, NOT_A_LIST_OF_NUMBERS, NOT_A_PORT, OPTION_NOT_A_NUMBER
from copylab.experiments import EXPERIMENTS
from copylab.formatting import fmt_size


def parse_list(text: str | None, convert: Callable[[str], Any] = str) -> list[Any] | None:
    """'64,1K,4K' -> [64, 1024, 4096]; None stays None (= not given)."""
    if text is None:
        return None
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise EMPTY_LIST_ITEM.error(text=text)
    try:
        return [convert(item) for item in items]
    except ValueError:
        raise NOT_A_LIST_OF_NUMBERS.error(text=text) from None


def parse_number(label: str, text: Any, convert: Callable[[str], Any]) -> Any:
    """TEXT as a number (None stays None); a one-line error naming --LABEL otherwise."""
    if text is None:
        return None
    try:
        return convert(str(text))
    except ValueError:
        raise OPTION_NOT_A_NUMBER.error(label=label, text=text) from None


def parse_size(text: str) -> int:
    """'4K' -> 4096, '1M' -> 1048576, '64' -> 64."""
    units = {"K": 1 << 10, "M": 1 << 20}
    if text[-1:].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def parse_port(text: Any) -> int:
    port: int = parse_number("port", text, int)
    if not 1 <= port <= 65535:
        raise NOT_A_PORT.error(port=port)
    return port


def setting_value(setting: Setting, given: Any) -> Any:
    """A run-sweep option's value as SETTING takes it; None when not given."""
    if setting.kind == "bool":
        return None if given in (None, setting.default) else bool(given)
    if given is None:
        return None
    converters: dict[str, Callable[[str], Any]] = {"ints": int, "sizes": parse_size, "strs": str}
    convert = converters.get(setting.kind)
    if convert is not None:
        return parse_list(given, convert)
    if setting.kind in ("int", "float"):
        return parse_number(setting.option or setting.name, given, int if setting.kind == "int" else float)
    return str(given)


def value_text(setting: Setting, value: Any) -> str:
    """VALUE of SETTING as the command line would give it."""
    if setting.kind == "bool":
        return "yes" if value else "no"
    if isinstance(value, (tuple, list)):
        return ",".join(value_text(setting, item) for item in value)
    if setting.kind == "sizes":
        return fmt_size(value).replace(" KiB", "K").replace(" MiB", "M").replace(" B", "")
    return str(value)


def profiled(setting: Setting) -> bool:
    """Whether some experiment's profile sets SETTING (then --profile gives its default)."""
    return any(
        setting.name in profile for experiment in EXPERIMENTS.values() for profile in experiment.profiles.values()
    )


def default_text(setting: Setting) -> str:
    """What a sweep takes for SETTING when it is not given: its profile's value, else the table's default."""
    if setting.chosen_on is not None:
        own = "chosen where the sweep runs"
    elif setting.drawn:
        own = "drawn for each sweep"
    elif setting.default is None:
        own = "not set"
    elif setting.default == ():
        own = "none"
    else:
        own = value_text(setting, setting.default)
    if not profiled(setting):
        return own
    return "the profile's" if setting.default in (None, ()) else f"the profile's, else {own}"


def limits_text(setting: Setting) -> str:
    """The limits and choices SETTING declares, in words ('' when it declares none)."""
    parts = []
    if setting.low is not None or setting.high is not None:
        low = "" if setting.low is None else ("above " if setting.low_open else "from ") + _bound(setting, setting.low)
        high = "" if setting.high is None else f"to {_bound(setting, setting.high)}"
        parts.append(" ".join(filter(None, [low, high])))
    allowed = setting.allowed()
    if allowed:
        parts.append(("one of " if setting.kind == "str" else "each of ") + ", ".join(allowed))
    if setting.length:
        parts.append(f"exactly {setting.length} items")
    return "; ".join(parts)


def _bound(setting: Setting, value: float) -> str:
    if setting.kind == "sizes":
        return fmt_size(value)
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def shown_default(default: Any) -> str | None:
    """An option's default as --help says it; None when it has none."""
    if default is None:
        return None
    if isinstance(default, bool):
        return "yes" if default else "no"
    return str(default)


def with_default(command: str, option: str, default: Any, help: str) -> str:
    """HELP of COMMAND's OPTION followed by its default (None: it has none), and by a run-sweep setting's limits
    and choices: what --help shows."""
    setting = next((s for s in SETTINGS if s.parameter == option), None) if command == "run-sweep" else None
    if setting is not None:
        said = [f"default: {default_text(setting)}", limits_text(setting)]
    else:
        shown = shown_default(default)
        said = [] if shown is None else [f"default: {shown}"]
    said = [part for part in said if part]
    return f"{help} ({'; '.join(said)})" if said else help
