"""Webster / Sainte-Laguë apportionment with Karmada's tie-breaks, in O(parties log parties).

Karmada (``pkg/util/helper/webstermethod.go``) hands out seats one at a time to the party with the
highest priority ``votes / (2*seats + 1)`` (float64), breaking equal priorities by fewer current seats,
then by name (smaller name wins, or larger when FNV-1a-32 of the resource uid is odd).

Invariant that makes the fast path exact: every party's sequence of *offers* ``(party, k)`` for
``k = s0, s0+1, ...`` is strictly decreasing in that order (priority falls as ``k`` grows, and equal
priorities are broken by ``k`` ascending). Seat-by-seat greedy therefore takes exactly the ``N`` best
offers of the union. We take every offer whose priority is above a divisor-estimate threshold (a set
that is closed under "better than", so a prefix of the global order) and then add or remove single
offers with a heap until exactly ``N`` are taken. The fix-up is O(parties) in the typical case, so the
cost does not grow with the number of seats.

With no seats held and no more seats than parties (a scheduler's usual case: a few replicas over many
clusters), only the ``N`` parties with the best first offers can win a seat: ``_few_seats`` runs the
seat-by-seat method over them alone, after one sort that C does. ``seats_won`` gives the same seats but
lists only the parties that won any (``allocate_webster_seats`` lists every party, as Karmada does).

Only the parity of FNV-1a-32 matters for the tie-break, and ``larger_name_wins`` works it out without the
hash (a test holds it to ``fnv1a_32``).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Mapping

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
# Integers below 2**53 convert to float64 exactly (so their order and equality carry over).
_FLOAT_EXACT = 2**53


def fnv1a_32(text: str) -> int:
    """FNV-1a 32-bit hash of the UTF-8 bytes of ``text`` (Go's ``hash/fnv`` New32a)."""
    value = _FNV32_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def larger_name_wins(uid: str) -> bool:
    """Karmada's ``tieBreakerByUID`` direction: an odd FNV-1a-32 of a non-empty uid favours larger names.

    Only the parity of the hash counts, and it is worked out without the hash: the offset basis and the
    prime are odd, so each step ``(h ^ byte) * prime`` keeps the parity of ``h ^ byte``; the hash is odd when
    the uid's UTF-8 bytes hold an even number of odd bytes (counted in C; a test holds it to ``fnv1a_32``).
    """
    if not uid:
        return False
    data = uid.encode()
    odd_bytes = len(data) - len(data.translate(None, _ODD_BYTES))
    return odd_bytes % 2 == 0


_ODD_BYTES = bytes(range(1, 256, 2))


def _priority(votes: int, seats: int) -> float:
    # Go computes float64(votes) / float64(2*seats+1); converting each side first keeps parity for huge ints.
    return float(votes) / float(2 * seats + 1)


def allocate_webster_seats(
    new_seats: int,
    votes: Mapping[str, int],
    initial: Mapping[str, int] | None = None,
    *,
    prefer_larger_names: bool = False,
) -> dict[str, int]:
    """Seats per party after adding ``new_seats`` to ``initial``; every party listed, sorted by name.

    Parties are the union of ``votes`` (seats default 0) and ``initial`` (votes default 0). Equal to
    Karmada's ``AllocateWebsterSeats`` with its default tie-breaker (``prefer_larger_names=False``) or
    with ``tieBreakerByUID`` (``prefer_larger_names=larger_name_wins(uid)``).
    """
    initial = initial or {}
    names = sorted(votes.keys() | initial.keys()) if initial else sorted(votes)
    if not names:
        return {}
    if 0 < new_seats <= len(names) and not initial:
        won = _few_seats(new_seats, votes, names, prefer_larger_names)
        if won is not None:
            return {**dict.fromkeys(names, 0), **won}
    fv = [float(votes.get(name, 0)) for name in names]
    s0 = [int(initial.get(name, 0)) for name in names] if initial else [0] * len(names)
    if new_seats <= 0:
        return dict(zip(names, s0, strict=True))
    # rank orders equal offers by name: smaller index wins, or larger when the uid parity says so.
    sign = -1 if prefer_larger_names else 1
    seats = _estimate(new_seats, fv, s0)
    surplus = sum(seats) - sum(s0) - new_seats
    if surplus > 0:
        _drop_worst(surplus, fv, s0, sign, seats)
    elif surplus < 0:
        _add_best(-surplus, fv, sign, seats)
    return dict(zip(names, seats, strict=True))


def seats_won(
    new_seats: int, votes: Mapping[str, int], *, prefer_larger_names: bool = False
) -> dict[str, int]:
    """``allocate_webster_seats`` from no seats held, listing only the parties that won a seat: a scheduler
    divides a few replicas over many clusters, and the others' zeros are work nobody reads."""
    names = sorted(votes)
    if 0 < new_seats <= len(names):
        won = _few_seats(new_seats, votes, names, prefer_larger_names)
        if won is not None:
            return won
    seats = allocate_webster_seats(new_seats, votes, prefer_larger_names=prefer_larger_names)
    return {name: count for name, count in seats.items() if count}


def _few_seats(
    new_seats: int, votes: Mapping[str, int], names: list[str], prefer_larger_names: bool
) -> dict[str, int] | None:
    """No seats held and no more seats than parties (a scheduler's usual case: a few replicas over many
    clusters): seat by seat over the ``new_seats`` parties with the best first offers, in C but for them.
    The parties that won a seat, with their seats; None when a vote is negative or too large for float64
    to order the priorities as the votes.

    No other party can win a seat: each of its offers is beaten by those ``new_seats`` first offers. A first
    offer is the party's votes, so the best ones are the votes in descending order (when every vote is
    non-negative and below 2**53, ordering the votes orders their float64 priorities alike), equal votes in
    name order (a stable sort keeps it; reversed when larger names win).
    """
    ranked = sorted(reversed(names) if prefer_larger_names else names, key=votes.__getitem__, reverse=True)
    if votes[ranked[-1]] < 0 or votes[ranked[0]] >= _FLOAT_EXACT:
        return None
    winners = ranked[:new_seats]
    if _priority(votes[winners[-1]], 0) >= _priority(votes[winners[0]], 1):
        # The worst first offer taken beats the best second offer (or ties it, with fewer seats): one each.
        return dict.fromkeys(winners, 1)
    seats = dict.fromkeys(winners, 0)
    sign = -1 if prefer_larger_names else 1
    heap = [(-float(votes[n]), 0, sign * bisect_left(names, n), n) for n in winners]
    heapq.heapify(heap)
    for _ in range(new_seats):
        _, k, rank, name = heap[0]
        seats[name] = k + 1
        heapq.heapreplace(heap, (-_priority(votes[name], k + 1), k + 1, rank, name))
    return {name: count for name, count in seats.items() if count}


def _estimate(new_seats: int, fv: list[float], s0: list[int]) -> list[int]:
    """Seats per party from a divisor guess: every offer with priority strictly above ``threshold``.

    That set is closed under "better than", hence a prefix of the global offer order; parties already
    holding more than it grants keep their initial seats (their offers start at ``s0``).
    """
    total_votes = sum(x for x in fv if x > 0)
    if total_votes == 0:
        return list(s0)
    held = sum(s for x, s in zip(fv, s0, strict=True) if x > 0)
    threshold = total_votes / (2.0 * (new_seats + held))
    scale = 1.0 / (2.0 * threshold)
    ks = [int(x * scale + 0.5) if x > 0 else 0 for x in fv]
    # The closed form can be a step off under rounding; re-check with the priority's own division.
    off = [
        i
        for i, (x, k) in enumerate(zip(fv, ks, strict=True))
        if x > 0 and ((k > 0 and not x / (2 * k - 1) > threshold) or x / (2 * k + 1) > threshold)
    ]
    for i in off:
        ks[i] = _offers_above(fv[i], threshold, ks[i])
    return [k if k > s else s for k, s in zip(ks, s0, strict=True)]


def _offers_above(votes: float, threshold: float, k: int) -> int:
    """Count of k >= 0 with ``votes / (2k+1) > threshold``, walking from a guess to the exact boundary."""
    while k > 0 and not votes / (2 * k - 1) > threshold:
        k -= 1
    while votes / (2 * k + 1) > threshold:
        k += 1
    return k


def _add_best(count: int, fv: list[float], sign: int, seats: list[int]) -> None:
    """Take the ``count`` best next offers, one at a time (the seat-by-seat method, continued).

    A party whose next offer is not among the ``count`` best next offers cannot win any seat, so the heap
    starts from those only.
    """
    # With no seats held yet, each party's next offer is its votes (``x / 1``).
    nxt = [x / (2 * k + 1) for x, k in zip(fv, seats, strict=True)] if any(seats) else fv
    cut = sorted(nxt, reverse=True)[count - 1] if count < len(nxt) else -math.inf
    heap = [(-p, seats[i], sign * i, i) for i, p in enumerate(nxt) if p >= cut]
    heapq.heapify(heap)
    for _ in range(count):
        _, k, rank, i = heap[0]
        seats[i] = k + 1
        heapq.heapreplace(heap, (-(fv[i] / (2 * k + 3)), k + 1, rank, i))


def _drop_worst(count: int, fv: list[float], s0: list[int], sign: int, seats: list[int]) -> None:
    """Give back the ``count`` worst taken offers; a party's worst is its last, so a prefix stays a prefix.

    A party whose last offer is not among the ``count`` worst last offers keeps all of its seats.
    """
    held = [i for i, (k, s) in enumerate(zip(seats, s0, strict=True)) if k > s]
    last = [fv[i] / (2 * seats[i] - 1) for i in held]
    cut = heapq.nsmallest(count, last)[-1] if count < len(last) else math.inf
    heap = [(p, 1 - seats[i], -sign * i, i) for p, i in zip(last, held, strict=True) if p <= cut]
    heapq.heapify(heap)
    for _ in range(count):
        _, _, neg_rank, i = heapq.heappop(heap)
        seats[i] -= 1
        if seats[i] > s0[i]:
            k = seats[i] - 1
            heapq.heappush(heap, (fv[i] / (2 * k + 1), -k, neg_rank, i))
