"""`federation get evictions` and the failover section of `describe rb`, against a real server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from federation.store.history import EVICTED, TASK_REMOVED, HistoryEntry, HistoryRepository
from federation.store.repository import ObjectRepository
from tests.cli.test_client_verbs import run
from tests.store.factories import make_binding

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _record(server, binding: dict) -> None:
    entries = [
        HistoryEntry.for_binding(
            binding,
            at=T0,
            action=EVICTED,
            cluster="member1",
            reason="TaintUntolerated",
            producer="TaintManager",
            message="Evicted from member1",
        ),
        HistoryEntry.for_binding(
            binding,
            at=T0 + timedelta(seconds=30),
            action=TASK_REMOVED,
            cluster="member1",
            reason="Healthy",
            producer="TaintManager",
            message="the new placement is healthy",
        ),
    ]
    with server.process.api_context.uow() as session:
        HistoryRepository(session).record(entries)


def test_get_evictions_and_describe_rb_show_the_history(federation_server):
    with federation_server.process.api_context.uow() as session:
        binding = ObjectRepository(session, "ResourceBinding", "work.karmada.io/v1alpha2").create(
            make_binding()
        )
    _record(federation_server, binding)

    listed = run("get", "evictions", "-A")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split() == ["TIME", "ACTION", "BINDING", "CLUSTER", "REASON", "MESSAGE"]
    assert lines[1].split()[:5] == [
        "2026-05-01T12:00:00Z",
        "Evicted",
        "default/nginx-deployment",
        "member1",
        "TaintUntolerated",
    ]
    assert lines[2].split()[1] == "TaskRemoved"
    assert run("get", "evictions", "--cluster", "member9").output.strip() == "No failover history found."

    described = run("describe", "rb", "nginx-deployment")
    assert described.exit_code == 0, described.output
    section = described.output.split("Failover events:\n", 1)[1].splitlines()
    assert section[0].split() == ["TIME", "ACTION", "CLUSTER", "REASON", "MESSAGE"]
    assert "Evicted" in section[1] and "Healthy" in section[2]
