"""``SharedInstances``: one instance per distinct value, and a table that never outgrows its owner's use."""

from __future__ import annotations

from federation.shared_instances import SharedInstances


def test_an_equal_value_gets_the_instance_kept_first() -> None:
    shared: SharedInstances[tuple[str, int]] = SharedInstances()
    first = shared.share(("cpu", 100))
    again = shared.share(tuple(["cpu", 100]))  # type: ignore[arg-type]
    assert again is first and len(shared) == 1
    assert shared.share(("cpu", 200)) == ("cpu", 200) and len(shared) == 2


def test_prune_rebuilds_from_the_values_in_use_only_past_twice_their_count_and_the_slack() -> None:
    shared: SharedInstances[int] = SharedInstances(slack=4)
    in_use = [shared.share(n) for n in range(1000, 1003)]
    for n in range(2000, 2007):  # 10 kept: 2 * 3 + 4 is not exceeded
        shared.share(n)
    shared.prune(len(in_use), lambda: in_use)
    assert len(shared) == 10
    shared.share(3000)
    shared.prune(len(in_use), lambda: in_use)
    assert len(shared) == 3
    assert shared.share(1000) is in_use[0]
