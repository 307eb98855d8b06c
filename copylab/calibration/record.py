"""What a copy costs on the host, as measured: the record the manifest keeps, and what may be derived from it.

Pure: nothing here runs anything (copylab.calibration.measurement measures).  The copy cost is measured per working set
along three paths (libc's memcpy as linked; glibc's memcpy with its rep-movsb threshold raised, i.e. its
vector copy; the kernel's copy to user space through read()) and at two placements of the destination
relative to the source within a page.  From those samples this module derives:

- **findings**: where two ways of copying the same bytes differ by more than FINDING_RATIO (a string
  instruction against a vector copy, one placement against the other).  A finding is a property of the
  host's copy path, not of a cache level, and is reported as such;
- the **cost per cache level** from the points no finding touches;
- whether the calibration is **consistent**: not disturbed by another process, its rounds (separate
  processes, seconds apart) agreeing, and its costs by level explained by the hierarchy.  An inconsistent
  calibration names no cache level.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from copylab.error_catalogue import CALIBRATION_INCOMPLETE
from copylab.formatting import fmt_num, fmt_size

# Two ways of copying the same bytes that differ by more than this are a finding, not noise.
FINDING_RATIO = 2.0
# A sample whose thread was on a CPU for less than this share of its wall time was disturbed.
MIN_ON_CPU = 0.9
# More disturbed samples than this share, and the calibration is not used.
MAX_DISTURBED_SHARE = 0.1
# Rounds whose medians of one point differ by more than this factor disagree.
MAX_ROUND_DISAGREEMENT = 2.0
# A larger working set cheaper than this share of a smaller one's cost is not explained by the hierarchy.
HIERARCHY_TOLERANCE = 0.5

MEMCPY, VECTOR, READ = "memcpy", "memcpy_vector", "read"
PATH_LABELS = {
    MEMCPY: "memcpy as linked",
    VECTOR: "memcpy without rep movsb (glibc's vector copy)",
    READ: "the kernel's copy to user space (read())",
}
ALIGNED = 0


@dataclass(frozen=True)
class CacheLevel:
    """One data (or unified) cache of the sending CPU, as sysfs describes it."""

    name: str  # L1d, L2, L3
    size_bytes: int
    shared_cpus: str  # sysfs shared_cpu_list


@dataclass(frozen=True)
class CopyCost:
    """What copying one byte costs when source and destination together are WORKING_SET_BYTES."""

    region: str  # the smallest cache the working set fits in (L1d, L2, L3), or memory
    working_set_bytes: int
    ns_per_byte: float
    spread: float | None = None  # (largest - smallest round median) / median; None in older manifests


@dataclass(frozen=True)
class CopyPoint:
    """Every sample of one working set, path and placement: ns per byte copied and the share of each sample's
    wall time its thread was on a CPU, per round (a separate process) and pass."""

    working_set_bytes: int
    path: str  # MEMCPY, VECTOR or READ
    offset: int  # bytes the destination starts past the source, modulo a page
    ns_per_byte: list[list[float]]
    on_cpu: list[list[float]]

    @property
    def copy_bytes(self) -> int:
        return self.working_set_bytes // 2

    @property
    def samples(self) -> list[float]:
        return [value for round_ in self.ns_per_byte for value in round_]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def round_medians(self) -> list[float]:
        return [statistics.median(round_) for round_ in self.ns_per_byte if round_]


@dataclass(frozen=True)
class CopyFinding:
    """Copies of FROM_BYTES to TO_BYTES that one way costs SLOWDOWN times what another way costs."""

    kind: str  # string_instruction | placement | kernel_placement
    path: str  # the slow path
    offset: int  # the placement at which it is slow
    from_bytes: int  # smallest copy size affected (bytes per copy call)
    to_bytes: int  # largest
    slowdown: float  # the largest ratio of medians in the range
    slow_ns_per_byte: float  # at that size
    fast_ns_per_byte: float
    compared_with: str  # what it is slow against: a path, or a placement

    def covers(self, copy_bytes: int) -> bool:
        return self.from_bytes <= copy_bytes <= self.to_bytes

    def describe(self, cpu_flags: Iterable[str] = ()) -> str:
        """One sentence: where, how much, and the mechanism measured."""
        sizes = f"copies of {fmt_size(self.from_bytes)}-{fmt_size(self.to_bytes)}"
        if self.from_bytes == self.to_bytes:
            sizes = f"copies of {fmt_size(self.from_bytes)}"
        place = _placement(self.offset)
        flags = [flag for flag in ("erms", "fsrm") if flag in set(cpu_flags)]
        hardware = f" (this CPU reports {' and '.join(flag.upper() for flag in flags)})" if flags else ""
        ratio = f"{fmt_num(self.slowdown)} times"
        costs = f"{fmt_num(self.slow_ns_per_byte)} against {fmt_num(self.fast_ns_per_byte)} ns/B"
        if self.kind == "string_instruction":
            return (
                f"glibc's memcpy copies {sizes[len('copies of ') :]} with `rep movsb`{hardware}, and with {place} "
                f"that instruction takes {ratio} as long as glibc's vector copy of the same bytes ({costs}; the "
                "vector copy measured with glibc's rep-movsb threshold raised through GLIBC_TUNABLES)"
            )
        if self.kind == "kernel_placement":
            return (
                f"the kernel's copy to user space (read(), recv()) takes {ratio} as long with {place} as with "
                f"{_placement(int(self.compared_with))} for {sizes} ({costs}){hardware}: the kernel copies with "
                "string instructions too where the CPU has FSRM"
            )
        return (
            f"{PATH_LABELS.get(self.path, self.path)} takes {ratio} as long with {place} as with "
            f"{_placement(int(self.compared_with))} for {sizes} ({costs})"
        )


def _placement(offset: int) -> str:
    if offset == ALIGNED:
        return "both at one page offset"
    # Short: a finding's sentence is quoted inside the report's longer ones.
    return f"the destination {offset} B past the source modulo 4 KiB"


@dataclass(frozen=True)
class Calibration:
    """Single-core memcpy bandwidth when the sweep started (the copy-bound ceiling), and the copy cost per byte
    inside each cache level and beyond, with what the measurements found and whether they agree."""

    buffer_mib: int
    runs: int
    memcpy_gbps: float
    llc_bytes: int | None = None
    cpu: str | None = None
    caches: list[CacheLevel] = field(default_factory=list)
    copy_cost: list[CopyCost] = field(default_factory=list)  # per level, from the points no finding touches
    copy_points: list[CopyPoint] = field(default_factory=list)
    findings: list[CopyFinding] = field(default_factory=list)
    # Why the costs by level may not be used (None: they may); older manifests: None.
    inconsistent: str | None = None
    cpu_flags: list[str] = field(default_factory=list)  # the copy-related flags /proc/cpuinfo lists (erms, fsrm)


def region_of(working_set: int, caches: list[CacheLevel]) -> str:
    """The smallest cache a working set fits in, or memory."""
    return next((level.name for level in caches if working_set <= level.size_bytes), "memory")


def _by_path(points: list[CopyPoint]) -> dict[tuple[str, int], dict[int, CopyPoint]]:
    grouped: dict[tuple[str, int], dict[int, CopyPoint]] = {}
    for point in points:
        grouped.setdefault((point.path, point.offset), {})[point.working_set_bytes] = point
    return grouped


def ratio_range(slow: CopyPoint, fast: CopyPoint) -> tuple[float, float]:
    """The ratio of SLOW to FAST over the calibration's rounds, at its least and at its most: SLOW's cheapest round
    median over FAST's dearest, and the other way round."""
    slow_rounds, fast_rounds = slow.round_medians() or [slow.median], fast.round_medians() or [fast.median]
    return min(slow_rounds) / max(fast_rounds), max(slow_rounds) / min(fast_rounds)


def _slower(slow: CopyPoint, fast: CopyPoint) -> float | None:
    """SLOW's median over FAST's when the whole range of that ratio over the rounds clears FINDING_RATIO and every
    sample of SLOW exceeds every sample of FAST; None otherwise.  An effect whose rounds straddle the threshold is
    not a finding: on one host, noise alone would decide from run to run whether it is claimed."""
    ratio = slow.median / fast.median
    if ratio_range(slow, fast)[0] > FINDING_RATIO and min(slow.samples) > max(fast.samples):
        return ratio
    return None


def _ranges(
    kind: str, path: str, offset: int, compared_with: str, hits: list[tuple[CopyPoint, CopyPoint, float | None]]
) -> list[CopyFinding]:
    """Findings from (slow, fast, ratio) at consecutive measured sizes: one per run of adjacent sizes."""
    findings: list[CopyFinding] = []
    run: list[tuple[CopyPoint, CopyPoint, float]] = []

    def close() -> None:
        if run:
            worst = max(run, key=lambda hit: hit[2])
            findings.append(
                CopyFinding(
                    kind,
                    path,
                    offset,
                    run[0][0].copy_bytes,
                    run[-1][0].copy_bytes,
                    worst[2],
                    worst[0].median,
                    worst[1].median,
                    compared_with,
                )
            )
            run.clear()

    for slow, fast, ratio in hits:
        if ratio is None:
            close()
        else:
            run.append((slow, fast, ratio))
    close()
    return findings


def find(points: list[CopyPoint]) -> list[CopyFinding]:
    """Where the same bytes cost FINDING_RATIO times more one way than another (module docstring)."""
    grouped = _by_path(points)
    findings: list[CopyFinding] = []
    offsets = sorted({point.offset for point in points})
    for offset in offsets:
        memcpy, vector = grouped.get((MEMCPY, offset), {}), grouped.get((VECTOR, offset), {})
        sizes = sorted(set(memcpy) & set(vector))
        hits = [(memcpy[s], vector[s], _slower(memcpy[s], vector[s])) for s in sizes]
        findings += _ranges("string_instruction", MEMCPY, offset, VECTOR, hits)
    explained = [f for f in findings if f.kind == "string_instruction"]
    for path, kind in ((MEMCPY, "placement"), (READ, "kernel_placement")):
        for offset in offsets:
            for other in offsets:
                if other == offset:
                    continue
                slow, fast = grouped.get((path, offset), {}), grouped.get((path, other), {})
                sizes = sorted(set(slow) & set(fast))
                hits = [
                    (slow[s], fast[s], None)
                    if any(f.path == path and f.offset == offset and f.covers(s // 2) for f in explained)
                    else (slow[s], fast[s], _slower(slow[s], fast[s]))
                    for s in sizes
                ]
                findings += _ranges(kind, path, offset, str(other), hits)
    return findings


def _touched(point: CopyPoint, findings: list[CopyFinding]) -> bool:
    return any(f.path == point.path and f.offset == point.offset and f.covers(point.copy_bytes) for f in findings)


def level_costs(points: list[CopyPoint], caches: list[CacheLevel], findings: list[CopyFinding]) -> list[CopyCost]:
    """The cost of memcpy as linked per working set, at the placement where it is cheapest, skipping what a
    finding touches; the spread is that of its rounds."""
    costs = []
    memcpy = [p for p in points if p.path == MEMCPY and not _touched(p, findings)]
    for size in sorted({p.working_set_bytes for p in memcpy}):
        best = min((p for p in memcpy if p.working_set_bytes == size), key=lambda p: p.median)
        rounds = best.round_medians()
        spread = (max(rounds) - min(rounds)) / best.median if len(rounds) > 1 else None
        costs.append(CopyCost(region_of(size, caches), size, best.median, spread))
    return costs


def region_costs(record: Calibration) -> dict[str, float]:
    """The median copy cost per byte of each region measured (L1d ... memory), smallest region first."""
    by_region: dict[str, list[float]] = {}
    for cost in record.copy_cost:
        by_region.setdefault(cost.region, []).append(cost.ns_per_byte)
    return {region: statistics.median(values) for region, values in by_region.items()}


def _region_rounds(
    points: list[CopyPoint], caches: list[CacheLevel], findings: list[CopyFinding]
) -> dict[str, list[float]]:
    """Per region, the cost of a copy in each round: the median over its working sets of memcpy's round median
    at the cheaper placement (what level_costs states, round by round)."""
    memcpy = [p for p in points if p.path == MEMCPY and not _touched(p, findings)]
    by_size: dict[int, list[CopyPoint]] = {}
    for point in memcpy:
        by_size.setdefault(point.working_set_bytes, []).append(point)
    rounds = min((len(p.ns_per_byte) for p in memcpy), default=0)
    per_region: dict[str, list[list[float]]] = {}
    for size, placements in sorted(by_size.items()):
        per_round = [min(statistics.median(p.ns_per_byte[r]) for p in placements) for r in range(rounds)]
        per_region.setdefault(region_of(size, caches), []).append(per_round)
    return {
        region: [statistics.median(size[r] for size in sizes) for r in range(rounds)]
        for region, sizes in per_region.items()
    }


def inconsistency(
    points: list[CopyPoint], costs: list[CopyCost], caches: list[CacheLevel], findings: list[CopyFinding]
) -> str | None:
    """Why the costs by level cannot be used, or None: samples taken while another process held the CPU,
    rounds that disagree on a region's cost, or costs the cache hierarchy does not explain."""
    shares = [share for point in points for round_ in point.on_cpu for share in round_]
    disturbed = sum(share < MIN_ON_CPU for share in shares)
    if shares and disturbed > MAX_DISTURBED_SHARE * len(shares):
        return (
            f"{disturbed} of {len(shares)} samples ran while another process held the CPU (the calibration's thread "
            f"was on it for less than {MIN_ON_CPU:.0%} of the sample)"
        )
    by_round = _region_rounds(points, caches, findings)
    for region, rounds in by_round.items():
        if len(rounds) > 1 and max(rounds) > MAX_ROUND_DISAGREEMENT * min(rounds):
            return (
                f"its rounds (separate processes) disagree on the cost of a copy inside {region} by "
                f"{fmt_num(max(rounds) / min(rounds))} times ({', '.join(fmt_num(r) for r in rounds)} ns per byte)"
            )
    order = [level.name for level in caches] + ["memory"]
    medians = {region: [c.ns_per_byte for c in costs if c.region == region] for region in order}
    measured = [(region, statistics.median(values)) for region, values in medians.items() if values]
    for i, (inner, inner_cost) in enumerate(measured):
        for outer, outer_cost in measured[i + 1 :]:
            if outer_cost < HIERARCHY_TOLERANCE * inner_cost:
                return (
                    f"a copy costs less beyond {inner} ({outer} {fmt_num(outer_cost)} ns per byte) than inside it "
                    f"({fmt_num(inner_cost)}), which the cache hierarchy does not explain"
                )
    return None


def derive(
    buffer_mib: int,
    runs: int,
    memcpy_gbps: float,
    llc_bytes: int | None,
    cpu: str | None,
    caches: list[CacheLevel],
    points: list[CopyPoint],
    cpu_flags: list[str],
) -> Calibration:
    """The calibration record of these measurements, with its findings, costs by level and consistency."""
    findings = find(points)
    costs = level_costs(points, caches, findings)
    return Calibration(
        buffer_mib,
        runs,
        memcpy_gbps,
        llc_bytes,
        cpu,
        caches,
        costs,
        points,
        findings,
        inconsistency(points, costs, caches, findings),
        cpu_flags,
    )


def copy_cost_at(record: Calibration, working_set: int) -> CopyCost:
    """The calibrated cost for a working set: the region it fits in and the median measured cost of that region."""
    region = region_of(working_set, record.caches)
    medians = region_costs(record)
    if region not in medians:
        raise CALIBRATION_INCOMPLETE.error(region=region)
    return CopyCost(region, working_set, medians[region])


# The calibration path that measures each way a sender makes its own copy
# (copylab.vocabulary.implementation.UserCopy).
CALL_PATHS = {"memcpy": MEMCPY, "read": READ}


def findings_for_copy(record: Calibration, call: str, copy_bytes: int) -> list[CopyFinding]:
    """The findings that touch one copy call of COPY_BYTES made with CALL (memcpy or read)."""
    return [f for f in record.findings if f.path == CALL_PATHS[call] and f.covers(copy_bytes)]


def region_rounds(record: Calibration) -> dict[str, list[float]]:
    """Per region, what a copy cost in each round of the calibration (where level_costs comes from)."""
    return _region_rounds(record.copy_points, record.caches, record.findings)


def _comparisons(points: list[CopyPoint]) -> list[tuple[str, str, int, str, int]]:
    """The pairs find() compares, as (label, slow path, slow offset, fast path, fast offset): the string instruction
    against the vector copy at each placement, then each path's other placements against the same offset."""
    offsets = sorted({point.offset for point in points})
    pairs = [(f"memcpy / vector copy, {_short_placement(o)}", MEMCPY, o, VECTOR, o) for o in offsets]
    for path, name in ((MEMCPY, "memcpy"), (READ, "read()")):
        pairs += [(f"{name}, {_short_placement(o)} / same offset", path, o, path, ALIGNED) for o in offsets if o]
    return pairs


def _short_placement(offset: int) -> str:
    return "same offset" if offset == ALIGNED else f"{offset} B apart"


def ratio_rows(record: Calibration) -> list[dict[str, str]]:
    """Per copy size, each ratio find() weighs: its median, and in brackets its least and its most over the rounds
    (ratio_range), so that a reader sees how near the threshold a finding or a non-finding lies.  A ratio is marked
    a finding where find() found one (the least of its range clears FINDING_RATIO, and a placement effect the
    string instruction explains is not counted twice)."""
    grouped = _by_path(record.copy_points)
    pairs = [pair for pair in _comparisons(record.copy_points) if (pair[1], pair[2]) in grouped]
    pairs = [pair for pair in pairs if (pair[3], pair[4]) in grouped]
    rows = []
    for size in sorted({point.working_set_bytes for point in record.copy_points}):
        row = {"Copy size": fmt_size(size // 2)}
        for label, slow_path, slow_offset, fast_path, fast_offset in pairs:
            slow, fast = grouped[(slow_path, slow_offset)].get(size), grouped[(fast_path, fast_offset)].get(size)
            if slow is None or fast is None:
                row[label] = "not measured"
                continue
            low, high = ratio_range(slow, fast)
            compared = fast_path if fast_path != slow_path else str(fast_offset)
            found = any(
                f.path == slow_path and f.offset == slow_offset and f.compared_with == compared and f.covers(size // 2)
                for f in record.findings
            )
            mark = " finding" if found else ""
            row[label] = f"{fmt_num(slow.median / fast.median)} [{fmt_num(low)}, {fmt_num(high)}]{mark}"
        rows.append(row)
    return rows


def copy_cost_table(record: Calibration) -> str:
    """The copy cost by cache level as a text table, then the findings and the verdict."""
    lines = [f"{'region':<8} {'working set':>12} {'ns/byte':>9} {'GB/s':>8} {'spread':>7}"]
    for cost in record.copy_cost:
        spread = f"{cost.spread:.0%}" if cost.spread is not None else "-"
        lines.append(
            f"{cost.region:<8} {fmt_size(cost.working_set_bytes):>12} {cost.ns_per_byte:>9.4f} "
            f"{1 / cost.ns_per_byte:>8.1f} {spread:>7}"
        )
    for finding in record.findings:
        lines.append(f"finding, not a cache level: {finding.describe(record.cpu_flags)}.")
    if record.inconsistent:
        lines.append(f"inconsistent, so no cache level is derived from it: {record.inconsistent}.")
    elif record.copy_points:
        lines.append("consistent: undisturbed, its rounds agree and the hierarchy explains the costs by level.")
    return "\n".join(lines)
