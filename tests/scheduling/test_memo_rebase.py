"""``CycleMemo``: values rebased from an earlier snapshot's (``rebase``), and values tailored per call
(``tailored``), the two ways ``rows`` leans on it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.scheduling import memo as memo_module
from federation.scheduling.memo import CycleMemo
from federation.scheduling.types import ClusterSnapshot
from tests.scheduling.sched_factories import make_cluster


def pool(count: int = 3) -> list[ClusterSnapshot]:
    return [make_cluster(f"m{i}", allocating={"pods": 1}) for i in range(count)]


def grown(cluster: ClusterSnapshot) -> ClusterSnapshot:
    """The cluster with one more pod allocating, as ``engine.assume`` makes it."""
    return cluster.with_allocating({"pods": cluster.allocating.get("pods", 0) + 1})


class Work:
    """compute and rebase for one key: each value is ``(key, snapshot)``; a rebase checks what it is given."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.computed: list[str] = []
        self.rebased: list[tuple[str, ClusterSnapshot]] = []

    def compute(self, cluster: ClusterSnapshot) -> tuple[str, ClusterSnapshot]:
        self.computed.append(cluster.name)
        return (self.key, cluster)

    def rebase(self, cluster: ClusterSnapshot, earlier: Any) -> tuple[str, ClusterSnapshot]:
        key, before = earlier
        assert key == self.key, "an earlier value of another key"
        assert before is not cluster and before.name == cluster.name
        assert before.same_but_allocating(cluster), "rebased across a change beyond allocating"
        self.rebased.append((cluster.name, before))
        return (self.key, cluster)


def test_a_snapshot_new_in_allocating_alone_is_rebased_from_the_earlier_value() -> None:
    memo, snapshots, work = CycleMemo(), pool(), Work("k")
    memo.per_cluster("k", snapshots, work.compute, rebase=work.rebase)
    after = [snapshots[0], grown(snapshots[1]), snapshots[2]]
    assert memo.per_cluster("k", after, work.compute, rebase=work.rebase) == [("k", c) for c in after]
    assert work.computed == ["m0", "m1", "m2"]
    assert work.rebased == [("m1", snapshots[1])]
    assert (memo.hits, memo.misses, memo.rebased) == (2, 4, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"labels": {"env": "prod"}},
        {"allocated": {"pods": 3}},
        {"allocatable": {"pods": 5}},
        {"region": "eu"},
        {"api_enablements": None},
    ],
)
def test_any_other_change_is_worked_out_afresh(change: dict[str, Any]) -> None:
    memo, snapshots, work = CycleMemo(), pool(), Work("k")
    memo.per_cluster("k", snapshots, work.compute, rebase=work.rebase)
    changed = replace(grown(snapshots[1]), **change)
    memo.per_cluster("k", [snapshots[0], changed, snapshots[2]], work.compute, rebase=work.rebase)
    assert work.computed == ["m0", "m1", "m2", "m1"]
    assert work.rebased == []
    # and the earlier values went with the change: a later allocating-only change rebases on the new one
    again = grown(changed)
    memo.per_cluster("k", [snapshots[0], again, snapshots[2]], work.compute, rebase=work.rebase)
    assert work.rebased == [("m1", changed)]


def test_a_key_not_asked_for_a_while_is_rebased_on_its_latest_earlier_value() -> None:
    memo, snapshots = CycleMemo(), pool()
    first, second = Work("a"), Work("b")
    memo.per_cluster("a", snapshots, first.compute, rebase=first.rebase)
    one = [grown(c) for c in snapshots]
    memo.per_cluster("b", one, second.compute, rebase=second.rebase)  # "a" not asked for these
    two = [grown(c) for c in one]
    assert memo.per_cluster("a", two, first.compute, rebase=first.rebase) == [("a", c) for c in two]
    assert first.rebased == [(c.name, c) for c in snapshots]
    assert first.computed == ["m0", "m1", "m2"]


def test_without_rebase_a_new_snapshot_is_computed() -> None:
    memo, snapshots, work = CycleMemo(), pool(), Work("k")
    memo.per_cluster("k", snapshots, work.compute)
    memo.per_cluster("k", [grown(snapshots[0]), *snapshots[1:]], work.compute)
    assert work.computed == ["m0", "m1", "m2", "m0"]
    assert memo.rebased == 0


def test_earlier_values_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo_module, "SLOT_LIMIT", 4)
    memo, current = CycleMemo(), pool(1)
    for step in range(30):
        current = [grown(current[0])]
        for key in range(1 + step % 7):  # up to 7 keys a snapshot, more than the limit holds
            work = Work(str(key))
            memo.per_cluster(str(key), current, work.compute, rebase=work.rebase)
        slot = memo._slots["m0"]
        assert len(slot.results) <= 4
        assert len(slot.earlier) <= 2 * 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),  # the key
            st.dictionaries(st.integers(0, 2), st.sampled_from(["allocating", "labels", "same"]), max_size=3),
            st.booleans(),  # with rebase
        ),
        min_size=1,
        max_size=15,
    )
)
def test_rebased_values_are_what_compute_gives(calls) -> None:
    """Whatever the keys and changes: every value is the key's for that very snapshot, and a rebase only ever
    gets the same key's value for an earlier snapshot that differs in allocating alone (``Work.rebase``)."""
    memo, current = CycleMemo(), pool()
    for key, changes, rebasing in calls:
        for position, kind in changes.items():
            if kind == "allocating":
                current[position] = grown(current[position])
            elif kind == "labels":
                current[position] = replace(current[position], labels={"step": str(len(calls))})
        work = Work(key)
        got = memo.per_cluster(key, current, work.compute, rebase=work.rebase if rebasing else None)
        assert got == [(key, c) for c in current]


def test_a_tailored_cluster_gets_the_calls_own_value_and_the_key_keeps_its_own() -> None:
    memo, snapshots, work = CycleMemo(), pool(), Work("k")
    seen: list[Any] = []

    def tailor(cluster: ClusterSnapshot, value: Any) -> Any:
        seen.append(value)
        return ("tailored", cluster.name)

    got = memo.per_cluster("k", snapshots, work.compute, tailored={"m1", "gone"}, tailor=tailor)
    assert got == [("k", snapshots[0]), ("tailored", "m1"), ("k", snapshots[2])]
    assert seen == [("k", snapshots[1])]  # made from the key's own value
    again = memo.per_cluster("k", snapshots, work.compute)
    assert again == [("k", c) for c in snapshots]  # the stored value is the key's, not the tailored one
    assert work.computed == ["m0", "m1", "m2"]


def test_a_name_twice_is_tailored_in_each_place() -> None:
    memo, work = CycleMemo(), Work("k")
    twice = [make_cluster("m0"), make_cluster("m1"), make_cluster("m0")]
    got = memo.per_cluster("k", twice, work.compute, tailored={"m0"}, tailor=lambda c, v: ("t", c.name))
    assert got == [("t", "m0"), ("k", twice[1]), ("t", "m0")]
