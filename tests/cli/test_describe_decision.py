"""`describe rb` shows the per-cluster explanation of the binding's latest decision (the stored status
keeps only the summary), against a real server."""

from __future__ import annotations

from datetime import UTC, datetime

from federation.store.decisions import Decision, DecisionRepository
from federation.store.repository import ObjectRepository
from tests.cli.test_client_verbs import run
from tests.store.factories import make_binding

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
EXPLANATION = {
    "result": "Success",
    "trigger": "PlacementChanged",
    "strategy": "StaticWeight",
    "clusters": {
        "member1": {
            "filter": {"passed": True},
            "scores": {"ClusterLocality": {"score": 0, "weight": 1}},
            "totalScore": 0,
            "available": 110,
            "selected": True,
            "replicas": 3,
        },
        "member2": {
            "filter": {
                "passed": False,
                "plugin": "TaintToleration",
                "reason": "untolerated taint",
                "failures": [{"plugin": "TaintToleration", "reason": "untolerated taint"}],
            },
            "selected": False,
            "replicas": 0,
        },
    },
    "selection": {"order": ["member1"]},
}


def test_describe_rb_reads_the_per_cluster_explanation_from_the_decision(federation_server):
    summary = {k: v for k, v in EXPLANATION.items() if k != "clusters"}
    body = make_binding()
    body["spec"]["suspension"] = {"scheduling": True}  # the server's own scheduler must not decide again
    with federation_server.process.api_context.uow() as session:
        repo = ObjectRepository(session, "ResourceBinding", "work.karmada.io/v1alpha2")
        binding = repo.create(body)
        repo.update_status("default", binding["metadata"]["name"], {"schedulingExplanation": summary})
        meta = binding["metadata"]
        DecisionRepository(session).append(
            Decision(
                binding_uid=meta["uid"],
                binding_kind="ResourceBinding",
                binding_namespace="default",
                binding_name=meta["name"],
                result="Success",
                created_at=T0,
                explanation=EXPLANATION,
            )
        )
    described = run("describe", "rb", meta["name"])
    assert described.exit_code == 0, described.output
    lines = described.output.split("Scheduling explanation:\n", 1)[1].splitlines()  # spec names clusters too
    assert "  Result: Success, trigger: PlacementChanged, strategy: StaticWeight" in lines
    member1 = next(line for line in lines if line.strip().startswith("member1"))
    assert member1.split()[:5] == ["member1", "selected", "3", "110", "0"]
    member2 = next(line for line in lines if line.strip().startswith("member2"))
    assert member2.split()[:3] == ["member2", "filtered", "0"] and "untolerated taint" in member2
    assert described.output.count("Scheduling explanation:") == 1
