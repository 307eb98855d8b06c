"""Numbers and names as the report and the explorer print them: Markdown, sizes, intervals."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from copylab.errors import BrokenInvariant


def fmt_num(x: float) -> str:
    """About three significant digits, thousands separated, never in scientific notation."""
    if x is None or not math.isfinite(x):
        return "n/a"
    magnitude = abs(x)
    if magnitude >= 100:
        return f"{x:,.0f}"
    if magnitude >= 10:
        return f"{x:.1f}"
    if magnitude >= 1 or magnitude == 0:
        return f"{x:.2f}"
    return f"{x:.{2 - math.floor(math.log10(magnitude))}f}"


def fmt_size(n: float, approximate: bool = False) -> str:
    """A size: whole units where it has them ('64 B', '4 KiB', '1 MiB'); otherwise its bytes ('1,536 B'), or,
    APPROXIMATE (an axis label, an estimate), three significant digits of its unit ('1.5 KiB', '5.66 KiB')."""
    whole = float(n).is_integer()
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and whole and int(n) % factor == 0:
            return f"{int(n) // factor} {unit}"
    if approximate:
        unit, factor = next(((u, f) for u, f in (("MiB", 1 << 20), ("KiB", 1 << 10)) if n >= f), ("B", 1))
        return f"{n / factor:.3g} {unit}"
    return f"{int(n):,} B"


def fmt_bytes(x: float) -> str:
    """An estimated size (e.g. an interpolated crossover) in whole bytes: '5,793 B'."""
    return f"{round(x):,} B"


def fmt_p(p: float) -> str:
    """A p-value, floored at '<0.001'."""
    return "<0.001" if p < 0.001 else fmt_num(p)


def fmt_interval(mean: float, low: float, high: float, unit: str = "") -> str:
    """'12.3 [11.9, 12.7] unit': a mean with its 95% interval; a single trial has none."""
    bounds = f"[{fmt_num(low)}, {fmt_num(high)}]" if math.isfinite(low) and math.isfinite(high) else "(no interval)"
    return f"{fmt_num(mean)} {bounds} {unit}" if unit else f"{fmt_num(mean)} {bounds}"


def fmt_duration(seconds: float) -> str:
    """A length of time in the unit a reader would say it in: seconds up to 90, then minutes, then hours."""
    if seconds < 90:
        return f"{fmt_num(seconds)} s"
    if seconds < 90 * 60:
        return f"{fmt_num(seconds / 60)} minutes"
    return f"{fmt_num(seconds / 3600)} hours"


def fmt_pct(fraction: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{fraction * 100:.1f}%"


def fmt_span(low: str, high: str) -> str:
    """'3 to 5' for a range of already formatted values, or just '3' when both ends print the same."""
    return low if low == high else f"{low} to {high}"


def fmt_change(before: float, after: float) -> str:
    """Relative change from before to after, signed: '+12.0%'."""
    return f"{(after / before - 1) * 100:+.1f}%" if before else "n/a"


def threads_text(threads: int) -> str:
    """'1 thread', '4 threads'."""
    return f"{threads} thread{'s' if threads != 1 else ''}"


def threads_listed(counts: list[int]) -> str:
    """'1 thread', '1, 4 and 8 threads': each count once, ascending."""
    listed = sorted(set(counts))
    if len(listed) == 1:
        return threads_text(listed[0])
    return f"{', '.join(map(str, listed[:-1]))} and {listed[-1]} threads"


def code(name: str) -> str:
    """An identifier (implementation, flag, syscall) or a tool's literal output, set in monospace.

    A code span prints everything literally except a run of backticks as long as its fence: the fence is one
    longer than the longest run inside, and padded with spaces when the text starts or ends with one."""
    runs = [len(run) for run in re.findall(r"`+", name)]
    if not runs:
        return f"`{name}`"
    fence = "`" * (max(runs) + 1)
    return f"{fence} {name} {fence}"


def md_escape(text: object) -> str:
    """Free text (an error message, a CPU model) made literal in Markdown: '<x>' would vanish as raw HTML, '&amp;'
    would print as '&', '$x$' as mathematics."""
    return re.sub(r"([\\`*_{}\[\]<>#|~^$&])", r"\\\1", str(text)).replace("\n", " ")


# What a line of the PDF's text holds, in characters of its monospace font (a safe bound: about 89 fit), the gap
# LaTeX sets between two columns (2\\tabcolsep = 12pt) in those characters, and the dashes a wide table's separator
# shares out among its columns (pandoc sizes the columns of a table wider than PANDOC_COLUMNS by their dashes).
LINE_CHARACTERS = 78
COLUMN_GAP = 2
PANDOC_COLUMNS = 72
WIDE_TABLE_DASHES = 200
NO_BREAK = "\u00a0"


def _unbreakable(text: str) -> int:
    """The longest run of TEXT that a line cannot break: a word, a code span or an interval, without its markup."""
    return max((len(word.strip("`*")) for word in text.split(" ")), default=0)


def _needs(header: list[str], body: list[list[str]]) -> list[float]:
    """The share of a wide table's column space each column needs for its longest unbreakable run.

    pandoc gives a column SHARE * (text width - the gaps between columns), so the gaps come off the line first; half
    a character more absorbs the difference between the estimate and the font."""
    room = LINE_CHARACTERS - COLUMN_GAP * (len(header) - 1)
    return [
        (max(_unbreakable(name), *(_unbreakable(line[i]) for line in body)) + 0.5) / room
        for i, name in enumerate(header)
    ]


def _fits(header: list[str], body: list[list[str]]) -> bool:
    """Whether every line of the table fits PANDOC_COLUMNS: then pandoc sets its columns at their natural widths
    (LaTeX's 'l'), which never overlap."""
    widths = [max(len(name), *(len(line[i]) for line in body)) for i, name in enumerate(header)]
    return sum(widths) + 3 * len(widths) + 1 <= PANDOC_COLUMNS


def _dashes(header: list[str], body: list[list[str]]) -> list[int]:
    """Each column's dashes.  A table that fits a line gets its cells' widths, so that the separator is no longer
    than its rows: a longer one makes pandoc size the columns by their dashes, and a one-digit column padded to
    ten dashes took the width a code span needed, which then ran into the next cell ('iterative0').  A wider table
    gets shares of WIDE_TABLE_DASHES that give every column at least its longest unbreakable run, the rest after
    its width."""
    widths = [max(len(name), *(len(line[i]) for line in body)) for i, name in enumerate(header)]
    if _fits(header, body):
        return [max(w, 3) for w in widths]
    wanted = [min(max(w, 10), 40) for w in widths]
    needs = _needs(header, body)
    spare = max(0.0, 1 - sum(needs))
    shares = [need + spare * want / sum(wanted) for need, want in zip(needs, wanted, strict=True)]
    # rounded up, then the largest share gives back what rounding added: no column falls below its need
    dashes = [max(1, math.ceil(share / sum(shares) * WIDE_TABLE_DASHES)) for share in shares]
    dashes[dashes.index(max(dashes))] -= sum(dashes) - WIDE_TABLE_DASHES
    return dashes


def _split(header: list[str], body: list[list[str]]) -> list[list[int]]:
    """The columns of each table a table too wide for a line becomes, each starting with the first column (the
    row's name): as many columns as fit together, so that no interval or code span has to break inside a cell."""
    groups: list[list[int]] = []
    for i in range(1, len(header)):
        candidate = [*groups[-1], i] if groups else [0, i]
        if groups and sum(_needs([header[c] for c in candidate], [[line[c] for c in candidate] for line in body])) <= 1:
            groups[-1] = candidate
        else:
            groups.append([0, i])
    return groups or [[0]]


def _joined(text: str) -> str:
    """TEXT with an interval's bounds, a size's unit ('256 KiB') and a ratio's 'x' after its number or interval,
    joined by no-break spaces."""
    text = re.sub(r"\[([^\[\] ]*), ([^\[\] ]*)\]", rf"[\1,{NO_BREAK}\2]", text)
    text = re.sub(r"(\d) ([KMG]iB|B)(?![\w/])", rf"\1{NO_BREAK}\2", text)
    return re.sub(r"([\d\]]) x\b", rf"\1{NO_BREAK}x", text)


# A cell that is one number, with its unit if any (joined by a no-break space): such columns are set flush right,
# so that their digits line up.  Intervals and verdict words stay flush left.
NUMBER = re.compile(r"[-+−]?(\d[\d,]*(\.\d+)?|\.\d+)(e[-+]?\d+)?([\u00a0 ]?(%|x|[KMG]iB|B|ns|µs|ms|s|Gbit/s))?")
MISSING = ("", "—", "–", "-", "n/a")


def _numeric(column: list[str]) -> bool:
    """Whether every cell of COLUMN is a number or missing, and one at least is a number."""
    numbers = [cell for cell in column if cell.strip() not in MISSING]
    return bool(numbers) and all(NUMBER.fullmatch(cell.strip()) for cell in numbers)


def markdown_table(rows: Iterable[Mapping[str, object]]) -> str:
    """A Markdown pipe table from row dicts (all rows share the first row's keys).

    A table that fits a line is set at its cells' widths; a wider one fills the text width, its columns sized by
    the separator's dashes (_dashes) so that no word, code span or interval runs into the next column.  An
    interval's two bounds are joined by a no-break space, and so is a ratio's 'x', so that a line never breaks
    inside '[low, high] x'.  A table whose unbreakable runs do not fit one line side by side becomes several
    tables, each with the first column and as many of the others as fit (_split).
    """
    rows = list(rows)
    if not rows:
        raise BrokenInvariant("a table needs at least one row")
    header = list(rows[0])
    body = [[_joined(re.sub(r"(?<!\\)\|", r"\\|", str(row[key])).replace("\n", " ")) for key in header] for row in rows]
    groups = [list(range(len(header)))] if sum(_needs(header, body)) <= 1 else _split(header, body)
    tables = []
    for group in groups:
        names, cells = [header[c] for c in group], [[line[c] for c in group] for line in body]
        rule = [
            "-" * max(d - 1, 1) + ":" if _numeric([line[c] for line in cells]) else "-" * d
            for c, d in enumerate(_dashes(names, cells))
        ]
        lines = ["| " + " | ".join(names) + " |", "|" + "|".join(rule) + "|"]
        tables.append("\n".join(lines + ["| " + " | ".join(line) + " |" for line in cells]))
    return "\n\n".join(tables)
