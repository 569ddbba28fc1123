"""Two writers, one resourceVersion: exactly one wins, on both backends."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm.exc import StaleDataError

from federation.store import AlreadyExists, Conflict, UnitOfWork, objects

from .factories import make_deployment

DEPLOYMENTS = ("apps/v1", "Deployment")


def create_nginx(uow: UnitOfWork) -> dict[str, Any]:
    with uow() as session:
        return objects(session, *DEPLOYMENTS).create(make_deployment())


def test_interleaved_writers_with_same_version(uow: UnitOfWork) -> None:
    """Both read the same version; the first commit wins, the second gets Conflict (up-front check or at flush)."""
    create_nginx(uow)
    with uow() as first, uow() as second:
        seen_first = objects(first, *DEPLOYMENTS).get("default", "nginx")
        seen_second = objects(second, *DEPLOYMENTS).get("default", "nginx")
        assert seen_first is not None and seen_second is not None
        seen_first["spec"]["replicas"] = 10
        objects(first, *DEPLOYMENTS).replace(seen_first)
        first.commit()
        seen_second["spec"]["replicas"] = 20
        with pytest.raises(Conflict):
            objects(second, *DEPLOYMENTS).replace(seen_second)
        second.rollback()
    with uow() as session:
        final = objects(session, *DEPLOYMENTS).get("default", "nginx")
    assert final is not None
    assert final["spec"]["replicas"] == 10
    assert int(final["metadata"]["resourceVersion"]) > int(seen_second["metadata"]["resourceVersion"])


def test_write_without_precondition_applies_to_latest_state(uow: UnitOfWork) -> None:
    """No resourceVersion given: last writer wins, on top of what is stored now (as in Kubernetes)."""
    create_nginx(uow)
    with uow() as first, uow() as second:
        loaded = objects(second, *DEPLOYMENTS).get("default", "nginx")  # loads the row as created
        between = objects(first, *DEPLOYMENTS).update_status("default", "nginx", {"replicas": 1})
        first.commit()
        updated = objects(second, *DEPLOYMENTS).update_status("default", "nginx", {"replicas": 2})
    assert loaded is not None
    versions = [int(o["metadata"]["resourceVersion"]) for o in (loaded, between, updated)]
    assert versions == sorted(set(versions))


def test_update_guard_rejects_a_row_changed_after_it_was_read(uow: UnitOfWork) -> None:
    """The flush-time guard itself: UPDATE ... WHERE resource_version = :seen matches nothing."""
    create_nginx(uow)
    with uow() as first, uow() as second:
        row = objects(second, *DEPLOYMENTS).require_row("default", "nginx")
        objects(first, *DEPLOYMENTS).update_status("default", "nginx", {"replicas": 1})
        first.commit()
        row.status = {"replicas": 2}
        with pytest.raises(StaleDataError):
            second.flush()
        second.rollback()


def race(uow: UnitOfWork, writers: int, write: Any) -> list[BaseException | None]:
    """Run ``write(session, index)`` in parallel threads, each in its own unit of work."""
    barrier = threading.Barrier(writers)
    outcomes: list[BaseException | None] = [None] * writers

    def run(index: int) -> None:
        try:
            with uow() as session:
                write(session, index, barrier)
        except BaseException as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def test_concurrent_replace_exactly_one_wins(uow: UnitOfWork, engine: Engine) -> None:
    created = create_nginx(uow)

    def write(session: Any, index: int, barrier: threading.Barrier) -> None:
        repo = objects(session, *DEPLOYMENTS)
        current = repo.get("default", "nginx")
        assert current is not None
        barrier.wait(timeout=30)  # both have read the created version before either writes
        current["spec"]["replicas"] = 100 + index
        repo.replace(current)

    outcomes = race(uow, 2, write)
    assert sorted(type(o).__name__ for o in outcomes) == ["Conflict", "NoneType"]
    with uow() as session:
        final = objects(session, *DEPLOYMENTS).get("default", "nginx")
    assert final is not None
    winner = outcomes.index(None)
    assert final["spec"]["replicas"] == 100 + winner
    assert int(final["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_concurrent_create_exactly_one_wins(uow: UnitOfWork) -> None:
    def write(session: Any, index: int, barrier: threading.Barrier) -> None:
        repo = objects(session, *DEPLOYMENTS)
        assert repo.get("default", "nginx") is None
        barrier.wait(timeout=30)  # both saw "absent" before either inserts
        repo.create(make_deployment(spec={"replicas": index}))

    outcomes = race(uow, 2, write)
    assert sorted(type(o).__name__ for o in outcomes) == ["AlreadyExists", "NoneType"]
    assert all(o is None or isinstance(o, AlreadyExists) for o in outcomes)
