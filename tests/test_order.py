"""The blocked design's order: every pair of contenders runs in both orders as often, and each sweep draws its seed
(recorded in its manifest) unless one is given, which replays its order exactly."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from copylab.declarations import config
from copylab.declarations.config import from_parameters
from copylab.measure.planning import schedule


def _sweep(**changes: object) -> config.SweepConfig:
    settings: dict[str, object] = dict(
        implementations=["two_copy", "one_copy", "zero_copy"],
        workloads=["stream"],
        sizes=[1024, 65536],
        side_sizes=[],
        threads=[1, 4],
        trials=6,
        receive=["copy"],
        namespaces=["clor_s", "clor_c"],
    )
    settings.update(changes)
    return config.make_config("order", "quick", **settings)


def _orders(specs: list) -> Counter[tuple[str, str, tuple[int, int]]]:
    """(first, second, (size, threads)) of every pair of contenders in a block, counted over the blocks."""
    blocks: dict[tuple[int, int, int], list] = {}
    for spec in specs:
        blocks.setdefault((spec.size_bytes, spec.threads, spec.repetition), []).append(spec)
    found: Counter[tuple[str, str, tuple[int, int]]] = Counter()
    for (size, threads, _), block in blocks.items():
        ordered = sorted(block, key=lambda spec: spec.block_position)
        for first, second in combinations(ordered, 2):
            found[(first.implementation.name, second.implementation.name, (size, threads))] += 1
    return found


def test_every_pair_runs_in_both_orders_equally_often():
    for seed in range(5):
        counts = _orders(schedule.plan(_sweep(seed=seed)))
        pairs = {(a, b, point) for a, b, point in counts}
        assert pairs, "no pair was compared"
        for a, b, point in pairs:
            assert counts[(a, b, point)] == counts[(b, a, point)] == 3, (seed, a, b, point)


def test_every_two_consecutive_blocks_balance_each_pair_whoever_else_shares_them():
    """Blocks 2j-1 and 2j of a point put each pair in opposite orders, even when one of them holds a contender more
    (a budget's extra blocks hold fewer contenders than the first pass's)."""
    full = _sweep(seed=9, sizes=[1024], threads=[1])
    point = schedule.point_of(schedule.configurations(full)[0])
    everyone = [c for c in schedule.configurations(full) if schedule.point_of(c) == point]
    for number in range(1, 12, 2):
        odd = schedule.block_order(full, point, number, everyone)
        even = schedule.block_order(full, point, number + 1, everyone[:2])
        assert [c for c in odd if c in everyone[:2]] == even[::-1]


def test_each_sweep_draws_its_seed_and_a_given_seed_replays_the_order():
    first, second = _sweep(), _sweep()
    assert first.seed != second.seed, "two sweeps drew the same seed"
    assert schedule.plan(first) != schedule.plan(second)
    assert first.parameters()["seed"] == first.seed, "the manifest records the drawn seed"
    replayed = from_parameters("order", "quick", first.parameters())
    assert schedule.plan(replayed) == schedule.plan(first), "the manifest's seed replays the order"
    given = _sweep(seed=12345)
    assert given.seed == 12345 and schedule.plan(given) == schedule.plan(_sweep(seed=12345))


def test_who_runs_first_changes_from_two_blocks_to_the_next():
    specs = schedule.plan(_sweep(seed=3, trials=12, sizes=[1024], threads=[1]))
    firsts = {spec.implementation.name for spec in specs if spec.block_position == 0}
    assert len(firsts) == 3, "every contender leads some blocks"
