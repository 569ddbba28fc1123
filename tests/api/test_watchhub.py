"""The watch hub between watches: it polls seldom, and a list first reads the log up to now, however many
batches that takes (both backends)."""

from __future__ import annotations

import asyncio

from federation.api.watchhub import ChangeHub
from federation.store import UnitOfWork, make_engine, migrate, objects


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_a_list_after_a_quiet_spell_reads_the_whole_backlog(database_url: str) -> None:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    uow = UnitOfWork.for_engine(engine)

    async def scenario() -> tuple[int, int, int, int]:
        # No watch open and an idle poll an hour away: only a list makes the hub read the log.
        hub = ChangeHub(uow, 0.01, lambda: False, batch=2, idle_poll_seconds=3600)
        await hub.start()
        await asyncio.sleep(0.05)  # the hub's first poll, then its idle pause
        before, polls = hub.resolved, hub.polls
        with uow() as session:
            for i in range(5):
                objects(session, "v1", "ConfigMap").create(configmap(f"c{i}"))
        await asyncio.sleep(0.05)  # past poll_seconds: the list must poll
        listed = await hub.current()
        return before, polls, listed, hub.polls

    try:
        before, polls, listed, after = asyncio.run(scenario())
    finally:
        engine.dispose()
    assert listed >= before + 5  # five revisions, in three batches of at most two
    assert after - polls >= 3
