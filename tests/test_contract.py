"""The C-to-Python contract: the keys each program prints, declared once in copylab/declarations/contract.py."""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
from pathlib import Path

import pytest

from copylab.declarations import contract, implementations, schema
from copylab.paths import CSRC
from copylab.vocabulary.implementation import DriverKind, DriverSpec

# Which source emits which result: the server's main and the client's main.
SOURCES = {"server": "server.c", "client": "client.c"}
EMITTED = re.compile(r'json_(?:str|u64|f64|null|u64_or_null|f64_or_null)\(&?j, "(\w+)"|(json_usage)\(&j')


def _emitted(source: Path) -> list[str]:
    """The keys SOURCE emits in order, with those of json_usage() (csrc/usage.c) where it calls it."""
    usage = [key for key, _ in EMITTED.findall((CSRC / "usage.c").read_text())]
    return [name for key, call in EMITTED.findall(source.read_text()) for name in (usage if call else [key])]


@pytest.mark.parametrize("role", list(SOURCES))
def test_the_c_source_emits_exactly_the_declared_keys_in_order(role):
    assert _emitted(CSRC / SOURCES[role]) == [key.name for key in contract.RESULTS[role]]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(bin_dir: Path, driver: DriverSpec, mode: str, files: Path) -> dict[str, str]:
    port = str(_free_port())
    variant = driver.name
    common = ["--port", port, "--size", "1000", "--mode", mode]
    file = ["--file", str(files / "messages-1000.bin")] if driver.from_file else []
    server = subprocess.Popen(
        [str(bin_dir / f"{variant}_server"), "--bind", "127.0.0.1", *common, *file, "--timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        client = subprocess.run(
            [
                str(bin_dir / f"{variant}_client"),
                "--connect",
                "127.0.0.1",
                *common,
                "--threads",
                "2",
                "--duration",
                "0.2",
                "--warmup",
                "0.05",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        server_out, server_err = server.communicate(timeout=20)
    finally:
        server.kill()
        server.wait()
    assert client.returncode == 0 and server.returncode == 0, client.stderr + server_err
    return {"server": server_out, "client": client.stdout}


DRIVERS = {
    impl.driver.name: impl.driver
    for impl in implementations.registry().values()
    if impl.driver.kind is DriverKind.PROGRAM_PAIR
}


@pytest.mark.parametrize("mode", ["stream", "rr"])
@pytest.mark.parametrize("variant", list(DRIVERS))
def test_every_program_prints_what_the_contract_declares(bin_dir, variant, mode, tmp_path):
    outputs = _run(bin_dir, DRIVERS[variant], mode, tmp_path)
    for role, stdout in outputs.items():
        result = contract.parse(role, stdout)
        assert result["role"] == role and result["variant"] == variant and result["mode"] == mode
        columns = contract.columns(role, result)
        side = contract.SIDES[role]
        assert columns[f"{side}_cpu_user_s"] == result["cpu_user_s"]


GOOD_SERVER = {key.name: {"int": 1, "float": 0.5, "str": "x"}[key.kind] for key in contract.RESULTS["server"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("retransmits"), "did not print the key retransmits"),
        (lambda r: r.update(goodput=3), "undeclared key(s) goodput"),
        (lambda r: r.update(cpu_user_s="fast"), "printed cpu_user_s = 'fast', not a JSON float"),
        (lambda r: r.update(retransmits=1.5), "printed retransmits = 1.5, not a JSON int"),
        (lambda r: r.update(retransmits=True), "printed retransmits = True, not a JSON int"),
        (lambda r: r.update(cpu_sys_s=None), "printed null for cpu_sys_s"),
    ],
    ids=["missing", "unknown", "mistyped float", "fractional int", "bool", "null"],
)
def test_a_missing_unknown_or_mistyped_key_fails_loudly(change, message):
    result = dict(GOOD_SERVER)
    change(result)
    with pytest.raises(contract.ContractError, match=re.escape(message)):
        contract.parse("server", json.dumps(result))


def test_nullable_keys_may_be_null_and_the_output_must_be_one_object():
    assert contract.parse("server", json.dumps({**GOOD_SERVER, "zc_sends": None}))["zc_sends"] is None
    for text, message in (("", "printed no JSON result"), ("[1]", "something other than one JSON object")):
        with pytest.raises(contract.ContractError, match=message):
            contract.parse("client", text)


def _keys_declared_in_their_own_words(source: str) -> list[str]:
    """The keys SOURCE builds with Key(...) and a column of their own: a quantity declared a second time, beside
    its column, where contract._stored() would take the column's declaration."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_stored":
            node.body = []  # the one place that builds a stored key, from the column
    for node in ast.walk(tree):
        is_key = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Key"
        if is_key and (len(node.args) >= 6 or any(keyword.arg == "column" for keyword in node.keywords)):
            found.append(ast.unparse(node.args[0]) if node.args else "?")
    return found


# The keys a program prints under another name than the column whose quantity they are.
CHECKED_AS = {"size": "size_bytes", "mode": "workload"}
# A key that bears a column's name but not its quantity: a model's server counts the idle connections it holds too.
NOT_THE_COLUMN = {("model_server", "connections")}


def _restated(results: dict[str, tuple[contract.Key, ...]]) -> list[tuple[str, str]]:
    """(role, key) of every key RESULTS checks against the trial in words of its own, where its column has them."""
    found = []
    for role, keys in results.items():
        for key in keys:
            column = schema.COLUMN_BY_NAME.get(CHECKED_AS.get(key.name, key.name))
            if key.column or column is None or (role, key.name) in NOT_THE_COLUMN:
                continue
            if (key.kind, key.unit, key.meaning) != (column.kind, column.unit, column.description):
                found.append((role, key.name))
    return found


def test_a_key_checked_against_the_trial_is_its_columns_quantity():
    """What the trial asked a program for (its size, threads, layout ...) is a trials.csv column's quantity too: the
    contract takes its type, unit and meaning from the column, as for the keys it stores."""
    planted = {"load_client": (contract.Key("offered_rate", "int", "1/s", "requests per second on a schedule"),)}
    assert _restated(planted) == [("load_client", "offered_rate")]
    assert _restated(contract.RESULTS) == []


def test_a_quantity_is_declared_once_for_the_columns_and_the_programs():
    """A key that fills a trials.csv column is the column's quantity: the schema (or the setting behind the
    column) declares it, and the contract takes its type, unit and meaning from there."""
    planted = 'def _stored(column):\n    return Key(column, "int", "B", "x", False, column)\n'
    planted += 'BYTES = Key("bytes", "int", "B", "bytes received", column="bytes")\n'
    assert _keys_declared_in_their_own_words(planted) == ["'bytes'"]
    source = (Path(contract.__file__)).read_text()
    assert _keys_declared_in_their_own_words(source) == []
    stored = [(role, key) for role, keys in contract.RESULTS.items() for key in keys if key.column]
    assert {"measured_s", "bytes", "messages", "throughput_gbps"} <= {key.column for _, key in stored}
    for role, key in stored:
        column = schema.COLUMN_BY_NAME[key.column.format(side=contract.SIDES[role])]
        assert (key.kind, key.unit) == (column.kind, column.unit), key.name
        if "{side}" not in key.column:
            assert key.meaning == column.description, key.name
        else:
            assert key.meaning == schema.SIDE_QUANTITIES[key.name].meaning("the program")
