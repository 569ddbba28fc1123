"""Webster: the fast quotient method equals seat-by-seat Karmada, plus apportionment properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from federation.scheduling.division import webster_divide
from federation.scheduling.webster import allocate_webster_seats, fnv1a_32, larger_name_wins, seats_won


def naive_webster(seats: int, votes: dict[str, int], initial: dict[str, int], larger: bool) -> dict[str, int]:
    """A literal transcription of Karmada's loop: one seat at a time to the max-priority party."""
    names = sorted(set(votes) | set(initial))
    held = {n: initial.get(n, 0) for n in names}

    def better(a: str, b: str) -> bool:
        pa = float(votes.get(a, 0)) / float(2 * held[a] + 1)
        pb = float(votes.get(b, 0)) / float(2 * held[b] + 1)
        if pa != pb:
            return pa > pb
        if held[a] != held[b]:
            return held[a] < held[b]
        return a > b if larger else a < b

    for _ in range(seats):
        best = names[0]
        for name in names[1:]:
            if better(name, best):
                best = name
        held[best] += 1
    return held


names = st.sampled_from([f"member{i}" for i in range(12)])
votes_st = st.dictionaries(
    names, st.one_of(st.integers(0, 12), st.integers(0, 10**6)), min_size=1, max_size=8
)
initial_st = st.dictionaries(names, st.integers(0, 6), max_size=4)


@settings(max_examples=400, deadline=None)
@given(votes_st, initial_st, st.integers(0, 80), st.booleans())
def test_fast_webster_equals_seat_by_seat(
    votes: dict[str, int], initial: dict[str, int], seats: int, larger: bool
) -> None:
    fast = allocate_webster_seats(seats, votes, initial, prefer_larger_names=larger)
    assert fast == naive_webster(seats, votes, initial, larger)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(names, st.integers(1, 1000), min_size=1, max_size=10), st.integers(0, 3000))
def test_large_seat_counts_equal_seat_by_seat(votes: dict[str, int], seats: int) -> None:
    assert allocate_webster_seats(seats, votes) == naive_webster(seats, votes, {}, False)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(names, st.integers(1, 500), min_size=1, max_size=10),
    st.integers(0, 500),
    st.text(max_size=8),
)
def test_sum_and_house_monotonicity(votes: dict[str, int], seats: int, uid: str) -> None:
    now, more = webster_divide(seats, votes, uid), webster_divide(seats + 1, votes, uid)
    assert sum(now.values()) == seats
    # Webster is house-monotone: one more seat never takes a seat from anybody.
    assert all(more[n] >= now[n] for n in votes)
    # Webster never deviates from the exact quota by a whole seat or more in the wrong direction.
    total = sum(votes.values())
    assert all(abs(now[n] - seats * v / total) < len(votes) + 1 for n, v in votes.items())


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(names, st.integers(0, 50), min_size=1, max_size=10),
    st.integers(0, 200),
    st.text(max_size=8),
)
def test_deterministic(votes: dict[str, int], seats: int, uid: str) -> None:
    assert webster_divide(seats, dict(reversed(list(votes.items()))), uid) == webster_divide(
        seats, votes, uid
    )


def test_fnv1a_known_values() -> None:
    assert fnv1a_32("") == 0x811C9DC5
    assert fnv1a_32("a") == 0xE40C292C
    assert fnv1a_32("foobar") == 0xBF9CF968


def test_uid_parity_flips_name_tie_break() -> None:
    even = next(u for u in (f"uid-{i}" for i in range(100)) if not larger_name_wins(u))
    odd = next(u for u in (f"uid-{i}" for i in range(100)) if larger_name_wins(u))
    weights = {"member1": 5, "member2": 5, "member3": 5}
    assert webster_divide(10, weights, even) == {"member1": 4, "member2": 3, "member3": 3}
    assert webster_divide(10, weights, odd) == {"member1": 3, "member2": 3, "member3": 4}
    assert webster_divide(10, weights, "") == {"member1": 4, "member2": 3, "member3": 3}


def test_static_weight_worked_example() -> None:
    weights = {"a": 3, "b": 2, "c": 1}
    assert webster_divide(12, weights) == {"a": 6, "b": 4, "c": 2}
    assert webster_divide(13, weights) == {"a": 7, "b": 4, "c": 2}
    assert webster_divide(14, weights) == {"a": 7, "b": 5, "c": 2}


def test_all_zero_votes_round_robin() -> None:
    assert allocate_webster_seats(5, {"a": 0, "b": 0}) == {"a": 3, "b": 2}
    assert allocate_webster_seats(0, {}) == {}


many = st.sampled_from([f"member{i:03d}" for i in range(40)])


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        many,
        st.one_of(
            st.sampled_from([0, 1, 2, 3, 6, 9, 2000, 2001]),  # ties, and second offers that tie first ones
            st.integers(0, 10**6),
            st.integers(2**53 - 2, 2**53 + 2),  # where float64 stops telling integers apart
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 40),
    st.booleans(),
)
def test_few_seats_over_many_parties_equal_seat_by_seat(
    votes: dict[str, int], seats: int, larger: bool
) -> None:
    """The scheduler's usual case (``_few_seats``): no more seats than parties, none held."""
    fast = allocate_webster_seats(seats, votes, prefer_larger_names=larger)
    assert fast == naive_webster(seats, votes, {}, larger)
    assert list(fast) == sorted(votes)  # every party listed, by name


def test_few_seats_with_a_second_seat_for_the_strongest() -> None:
    votes = {"a": 900, "b": 300, "c": 299, "d": 1}
    # a's second offer (300) ties b's first and beats c's: a, then b (fewer seats wins the tie), then a.
    assert allocate_webster_seats(3, votes) == {"a": 2, "b": 1, "c": 0, "d": 0}
    assert allocate_webster_seats(3, votes) == naive_webster(3, votes, {}, False)


@settings(max_examples=400, deadline=None)
@given(votes_st, st.integers(0, 40), st.booleans())
def test_seats_won_are_the_seats_without_the_zeros(votes: dict[str, int], seats: int, larger: bool) -> None:
    every = allocate_webster_seats(seats, votes, prefer_larger_names=larger)
    won = seats_won(seats, votes, prefer_larger_names=larger)
    assert won == {name: count for name, count in every.items() if count}
    assert all(count > 0 for count in won.values())


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_larger_name_wins_reads_the_parity_of_the_fnv_hash(uid: str) -> None:
    assert larger_name_wins(uid) == (bool(uid) and fnv1a_32(uid) % 2 == 1)
