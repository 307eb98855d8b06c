"""./inv report --fleet FILE: the same study on every pair of hosts a TOML file lists, and one report comparing them.

The file holds one [[pair]] table per pair: `name`, `server_host`, `client_host` and optionally `server_address`
(see docs/testbeds.md).  It is read whole, and every pair checked, before anything starts.  Pairs that share no
machine run at the same time, each in a process of its own (so Ctrl-C reaches each pair's sweep, which ends what
it started on its hosts as a single sweep does); a pair that shares a machine with one already running waits for
the next wave.  Each pair writes its own sweeps under the fleet's directory; a pair whose study fails (a host
lost) keeps what it measured, and the comparison report says what is missing.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from copylab.error_catalogue import (
    FLEET_BAD_NAME,
    FLEET_EMPTY,
    FLEET_NAME_TWICE,
    FLEET_NOT_TOML,
    FLEET_PAIR_KEY_MISSING,
    FLEET_PAIR_NOT_A_STRING,
    FLEET_PAIR_NOT_A_TABLE,
    FLEET_PAIR_REFUSED,
    FLEET_PAIR_UNKNOWN_KEY,
    FLEET_UNKNOWN_KEY,
    FLEET_UNREADABLE,
)
from copylab.errors import CopylabError
from copylab.measure.host.provenance import now_iso
from copylab.paths import DATA
from copylab.record.store import SweepStore
from copylab.report.hosts.fleet import PairStudy, write_fleet_comparison
from copylab.study import pipeline
from copylab.study.link import Link, checked

PAIR_KEYS = ("name", "server_host", "client_host", "server_address")
REQUIRED = ("name", "server_host", "client_host")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
OUTCOME_FILE = "outcome.json"


@dataclass(frozen=True)
class Pair:
    name: str
    link: Link


@dataclass(frozen=True)
class Study:
    """What is measured on each pair: the report's sweeps under one budget (copylab.study.pipeline.measure), their
    stores.  Called in each pair's own process."""

    budget_s: float

    def __call__(self, link: Link, directory: Path) -> list[SweepStore]:
        return pipeline.measure(self.budget_s, link, directory)


def _pair(path: Path, index: int, table: object, ssh_config: str | None) -> Pair:
    where = f"fleet: {path}: pair {index}"
    if not isinstance(table, dict):
        raise FLEET_PAIR_NOT_A_TABLE.error(where=where)
    unknown = sorted(set(table) - set(PAIR_KEYS))
    if unknown:
        raise FLEET_PAIR_UNKNOWN_KEY.error(where=where, key=unknown[0], keys=", ".join(PAIR_KEYS))
    for key in REQUIRED:
        if key not in table:
            raise FLEET_PAIR_KEY_MISSING.error(where=where, key=key)
    for key, value in table.items():
        if not isinstance(value, str):
            raise FLEET_PAIR_NOT_A_STRING.error(where=where, key=key)
    if not NAME.fullmatch(table["name"]):
        raise FLEET_BAD_NAME.error(where=where, name=table["name"])
    link = Link(table["server_host"], table["client_host"], table.get("server_address"), ssh_config)
    try:
        return Pair(table["name"], checked(link))
    except CopylabError as error:
        raise FLEET_PAIR_REFUSED.error(path=path, name=table["name"], error=error) from None


def read_fleet(path: Path, ssh_config: str | None) -> list[Pair]:
    """The pairs FILE lists, each checked; a one-line CopylabError for the first thing wrong."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise FLEET_UNREADABLE.error(path=path, reason=error.strerror) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise FLEET_NOT_TOML.error(path=path, error=error) from None
    unknown = sorted(set(data) - {"pair"})
    if unknown:
        raise FLEET_UNKNOWN_KEY.error(path=path, key=unknown[0])
    tables = data.get("pair")
    if not isinstance(tables, list) or not tables:
        raise FLEET_EMPTY.error(path=path)
    pairs = [_pair(path, index, table, ssh_config) for index, table in enumerate(tables, 1)]
    names = [pair.name for pair in pairs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise FLEET_NAME_TWICE.error(path=path, name=twice[0])
    return pairs


def waves(pairs: list[Pair]) -> list[list[Pair]]:
    """PAIRS in waves that run one after another, each of pairs that share no machine (in the file's order)."""
    found: list[list[Pair]] = []
    for pair in pairs:
        wave = next((w for w in found if all(not (pair.link.machines & p.link.machines) for p in w)), None)
        if wave is None:
            found.append([pair])
        else:
            wave.append(pair)
    return found


def _study(pair: Pair, study: Callable[[Link, Path], list[SweepStore]], directory: Path) -> None:
    """One pair's STUDY, in a process of its own: its sweeps under DIRECTORY, and how it ended in OUTCOME_FILE."""
    outcome: dict[str, object]
    try:
        stores = study(pair.link, directory)
        outcome = {"sweeps": [str(store.directory) for store in stores]}
    except CopylabError as error:
        print(f"copylab: pair {pair.name}: {error}", file=sys.stderr)
        outcome = {"error": str(error)}
    except KeyboardInterrupt:
        outcome = {"error": "interrupted"}
    (directory / OUTCOME_FILE).write_text(json.dumps(outcome))


def _ended(pair: Pair, directory: Path, exitcode: int | None) -> PairStudy:
    """What a pair's process left: its sweeps, or what is missing and where what it measured is kept."""
    try:
        outcome = json.loads((directory / OUTCOME_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        outcome = {"error": f"its process ended with status {exitcode} before saying how its study ended"}
    if "error" in outcome:
        kept = sorted(path.parent.name for path in directory.glob("*/trials.csv"))
        where = f"what it measured is kept in {directory} ({', '.join(kept)})" if kept else "nothing was measured"
        return PairStudy(pair.name, [], f"{outcome['error']}; {where}")
    return PairStudy(pair.name, [SweepStore(Path(path)) for path in outcome["sweeps"]])


def measure_fleet(pairs: list[Pair], study: Callable[[Link, Path], list[SweepStore]], root: Path) -> list[PairStudy]:
    """Each pair's STUDY under ROOT/NAME, the pairs of a wave at the same time; how each ended."""
    context = multiprocessing.get_context("spawn")
    studies: dict[str, PairStudy] = {}
    for wave in waves(pairs):
        print(f"copylab: fleet: measuring {', '.join(pair.name for pair in wave)} at the same time")
        running = []
        for pair in wave:
            directory = root / pair.name
            directory.mkdir(parents=True)
            process = context.Process(target=_study, args=(pair, study, directory), name=f"pair-{pair.name}")
            process.start()
            running.append((pair, directory, process))
        try:
            for _, _, process in running:
                process.join()
        finally:  # on Ctrl-C each pair's process ends its own sweep; wait for that
            for _, _, process in running:
                process.join()
        for pair, directory, process in running:
            studies[pair.name] = _ended(pair, directory, process.exitcode)
    return [studies[pair.name] for pair in pairs]


def report_fleet(
    path: Path, ssh_config: str | None, study: Callable[[Link, Path], list[SweepStore]], data_root: Path = DATA
) -> Path:
    """The whole job: every pair's STUDY, their analyses and the comparison report; the comparison's PDF."""
    pairs = read_fleet(path, ssh_config)
    stamp = now_iso().replace(":", "").replace("-", "").replace("+0000", "")
    root = data_root / f"fleet-{stamp}"
    studies = measure_fleet(pairs, study, root)
    pipeline.analyse([store for study in studies for store in study.stores])
    missing = [study.name for study in studies if study.missing]
    if missing:
        print(f"copylab: fleet: {', '.join(missing)} did not finish: the comparison says what is missing")
    return write_fleet_comparison(studies, root / "comparison")
