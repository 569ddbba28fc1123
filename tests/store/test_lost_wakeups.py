"""Lost wake-ups: a write that queues a row must survive a worker clearing the flag in between.

The interleaving that lost updates: an API write loads a row whose dirty flag is still True, the worker
claims and clears it (and commits), then the API write flushes "set True" and commits. The ORM saw no
change of the flag and left it out of its UPDATE, so the row ended ``flag=False, dirty_seq=2``: the
change never reached its controller. One case per dirty flag, on both backends; plus the orders that
always worked, so the protocol is pinned from every side.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from federation.store import UnitOfWork, claims, derive, objects
from federation.store.tables import (
    ClusterPropagationPolicyRow,
    ClusterRow,
    PropagationPolicyRow,
    ResourceBindingRow,
    ResourceTemplateRow,
    WorkRow,
)

from .factories import (
    make_binding,
    make_cluster,
    make_cluster_propagation_policy,
    make_deployment,
    make_propagation_policy,
    make_work,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Flag:
    """One dirty flag: the kind that carries it, a fresh object, and a user edit that must queue it."""

    table: claims.Claimable
    api_version: str
    kind: str
    make: Callable[[], dict[str, Any]]
    edit: Callable[[dict[str, Any]], None]


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(obj: dict[str, Any]) -> None:
        target = obj
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return edit


FLAGS = {
    "template.needs_detection": Flag(
        ResourceTemplateRow, "apps/v1", "Deployment", make_deployment, _set(("spec", "replicas"), 7)
    ),
    "propagationpolicy.needs_detection": Flag(
        PropagationPolicyRow,
        "policy.karmada.io/v1alpha1",
        "PropagationPolicy",
        make_propagation_policy,
        _set(("spec", "priority"), 5),
    ),
    "clusterpropagationpolicy.needs_detection": Flag(
        ClusterPropagationPolicyRow,
        "policy.karmada.io/v1alpha1",
        "ClusterPropagationPolicy",
        make_cluster_propagation_policy,
        _set(("spec", "priority"), 5),
    ),
    "binding.needs_scheduling": Flag(
        ResourceBindingRow,
        "work.karmada.io/v1alpha2",
        "ResourceBinding",
        make_binding,
        _set(("spec", "replicas"), 7),
    ),
    "cluster.requeue_bindings": Flag(
        ClusterRow, "cluster.karmada.io/v1alpha1", "Cluster", make_cluster, _set(("spec", "region"), "r9")
    ),
    "work.needs_sync": Flag(
        WorkRow,
        "work.karmada.io/v1alpha1",
        "Work",
        make_work,
        _set(("spec", "workload", "manifests"), [make_deployment(spec={"replicas": 9})]),
    ),
}


def _create(uow: UnitOfWork, flag: Flag) -> dict[str, Any]:
    with uow() as session:
        return objects(session, flag.api_version, flag.kind).create(flag.make())


def _state(uow: UnitOfWork, flag: Flag, name: str) -> tuple[bool, int]:
    table = flag.table
    with uow() as session:
        row = session.execute(
            select(getattr(table, table.dirty_flag), table.dirty_seq).where(table.name == name)
        ).one()
    return bool(row[0]), int(row[1])


def _work_off(session: Session, flag: Flag) -> None:
    """A controller pass: claim whatever is queued and finish it."""
    claimed = claims.claim(session, flag.table, "worker", 100, NOW, 60)
    assert claimed, "the row was queued, so the worker must get it"
    claims.release(session, flag.table, claimed, "worker", done=True)


def _edit(session: Session, flag: Flag, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    repo = objects(session, flag.api_version, flag.kind)
    current = repo.get(meta.get("namespace"), meta["name"])
    assert current is not None
    flag.edit(current)
    repo.replace(current)


@pytest.mark.parametrize("flag", FLAGS.values(), ids=list(FLAGS))
def test_write_loaded_before_a_clear_still_queues(
    uow: UnitOfWork, flag: Flag, monkeypatch: pytest.MonkeyPatch
) -> None:
    """API loads the row (flag True) → worker claims, clears, commits → API writes: still queued.

    The worker runs at the one point between the API's read and its flush (``derive.refresh``), exactly
    as a request and a controller pass interleave in a server.
    """
    created = _create(uow, flag)
    refresh = derive.refresh

    def worker_clears_first(session: Session, row: Any, **kwargs: Any) -> None:
        with uow() as worker:
            _work_off(worker, flag)
        refresh(session, row, **kwargs)

    monkeypatch.setattr(derive, "refresh", worker_clears_first)
    body = copy.deepcopy(created)
    flag.edit(body)
    with uow() as api:
        objects(api, flag.api_version, flag.kind).replace(body)
    monkeypatch.undo()
    assert _state(uow, flag, created["metadata"]["name"]) == (True, 2)


@pytest.mark.parametrize("flag", FLAGS.values(), ids=list(FLAGS))
def test_write_while_claimed_survives_the_release(uow: UnitOfWork, flag: Flag) -> None:
    """Worker claims → API writes and commits → worker releases done: the clear must not apply."""
    created = _create(uow, flag)
    with uow() as worker:
        claimed = claims.claim(worker, flag.table, "worker", 100, NOW, 60)
    with uow() as api:
        _edit(api, flag, created)
    with uow() as worker:
        claims.release(worker, flag.table, claimed, "worker", done=True)
    assert _state(uow, flag, created["metadata"]["name"]) == (True, 2)
    with uow() as worker:
        _work_off(worker, flag)
    assert _state(uow, flag, created["metadata"]["name"]) == (False, 2)


@pytest.mark.parametrize("flag", FLAGS.values(), ids=list(FLAGS))
def test_write_after_the_clear_queues_again(uow: UnitOfWork, flag: Flag) -> None:
    created = _create(uow, flag)
    with uow() as worker:
        _work_off(worker, flag)
    assert _state(uow, flag, created["metadata"]["name"]) == (False, 1)
    with uow() as api:
        _edit(api, flag, created)
    assert _state(uow, flag, created["metadata"]["name"]) == (True, 2)


@pytest.mark.parametrize("flag", FLAGS.values(), ids=list(FLAGS))
def test_failure_backs_off_and_a_new_write_cancels_it(uow: UnitOfWork, flag: Flag) -> None:
    """A failed item is retried after 1 s, 2 s, 4 s...; a user's edit makes it claimable at once."""
    created = _create(uow, flag)
    backoff = claims.Backoff(initial=1, maximum=300)
    at, delays = NOW, []
    for _ in range(3):
        with uow() as worker:
            if at > NOW:  # not before the back-off is over
                assert claims.claim(worker, flag.table, "worker", 100, at - timedelta(seconds=0.5), 60) == []
            (item,) = claims.claim(worker, flag.table, "worker", 100, at, 60)
            retry_at = claims.fail(worker, flag.table, item, "worker", at, backoff)
        delays.append((retry_at - at).total_seconds())
        at = retry_at
    assert delays == [1.0, 2.0, 4.0]
    with uow() as api:
        _edit(api, flag, created)
    with uow() as worker:
        (item,) = claims.claim(worker, flag.table, "worker", 100, NOW, 60)
        assert item.failures == 3  # the edit cancels the wait, not the count
        claims.release(worker, flag.table, [item], "worker", done=True)
    with uow() as session:
        failures = session.scalar(select(flag.table.failures).where(flag.table.id == item.id))
    assert failures == 0
