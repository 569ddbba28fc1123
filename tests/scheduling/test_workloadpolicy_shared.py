"""WorkloadPolicy counts shared across the workloads one policy governs: the ledger, the allocation that takes
what others hold off the quota, and the offline plan deciding several bindings of one policy in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from federation.model.workloadpolicy import WorkloadPolicySpec
from federation.scheduling.engine import schedule
from federation.scheduling.offline import plan_manifests
from federation.scheduling.workloadpolicy import QuotaLedger, ledger_of, policy_ref
from tests.scheduling.sched_factories import DYNAMIC, make_binding, pods_only
from tests.scheduling.test_planner_offline import cluster, deployment, placed, policy, scheduled

NOW = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)
ROLE = "topology.kosmos.io/role"
LABELS = {"h1": {ROLE: "host"}, "h2": {ROLE: "host"}, "m1": {ROLE: "member"}, "plain": {}}
P, Q = ("shop", "split"), ("shop", "other")
Manifest = dict[str, Any]


# -- the ledger ------------------------------------------------------------------------------------------


def test_others_count_per_topology_value_and_a_binding_never_counts_itself() -> None:
    ledger = QuotaLedger()
    ledger.place("shop/a", P, {"h1": 2, "m1": 1})
    ledger.place("shop/b", P, {"h1": 1, "h2": 1})
    assert ledger.used_by_others(P, "shop/a", ROLE, LABELS) == {"host": 2}
    assert ledger.used_by_others(P, "shop/b", ROLE, LABELS) == {"host": 2, "member": 1}
    assert ledger.used_by_others(P, "shop/new", ROLE, LABELS) == {"host": 4, "member": 1}
    assert ledger.used_by_others(Q, "shop/new", ROLE, LABELS) == {}


def test_a_new_placement_replaces_the_old_one_even_across_policies() -> None:
    ledger = QuotaLedger()
    ledger.place("shop/a", P, {"h1": 3})
    ledger.place("shop/a", P, {"h2": 1, "m1": 0})
    assert ledger.used_by_others(P, "shop/x", ROLE, LABELS) == {"host": 1}
    ledger.place("shop/a", Q, {"h1": 2})
    assert ledger.used_by_others(P, "shop/x", ROLE, LABELS) == {}
    assert ledger.used_by_others(Q, "shop/x", ROLE, LABELS) == {"host": 2}
    ledger.place("shop/a", None, {"h1": 2})  # no longer under any policy
    assert ledger.used_by_others(Q, "shop/x", ROLE, LABELS) == {}


def test_clusters_without_the_topology_label_or_gone_count_for_no_value() -> None:
    ledger = QuotaLedger()
    ledger.place("shop/a", P, {"plain": 4, "gone": 2, "m1": 1})
    assert ledger.used_by_others(P, "shop/x", ROLE, LABELS) == {"member": 1}


def applied(name: str, policy_key: str | None, clusters: dict[str, int], namespace: str = "shop") -> Manifest:
    annotations = {} if policy_key is None else {"kosmos.io/applied-workload-policy": policy_key}
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]},
    }


def test_ledger_of_stored_bindings_reads_the_applied_policy() -> None:
    ledger = ledger_of([
        applied("a", "split/3", {"h1": 2}),
        applied("b", "", {"h1": 5}),            # scheduled under no policy
        applied("c", None, {"h2": 5}),          # never scheduled by us
        applied("d", "split/1", {"m1": 1}, namespace="elsewhere"),
    ])  # fmt: skip
    assert ledger.used_by_others(P, "shop/x", ROLE, LABELS) == {"host": 2}
    assert ledger.used_by_others(("elsewhere", "split"), "elsewhere/x", ROLE, LABELS) == {"member": 1}
    assert policy_ref(applied("a", None, {}), "split/7") == P
    assert policy_ref(applied("a", None, {}), "") is None


# -- the allocation with what others hold -----------------------------------------------------------------


def spec(kind: str) -> WorkloadPolicySpec:
    return WorkloadPolicySpec.model_validate({
        "topologyKey": ROLE, "labelSelector": {"matchLabels": {"app": "web"}},
        "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
        "allocationType": kind, "allocationMethod": "Fill",
    })  # fmt: skip


def role_clusters() -> list[Any]:
    return [pods_only("member-a", 10, labels={ROLE: "member"}), pods_only("host-a", 10, labels={ROLE: "host"}),
            pods_only("host-b", 10, labels={ROLE: "host"}), pods_only("edge", 10)]  # fmt: skip


def targets(result: Any) -> dict[str, int]:
    return {t.name: t.replicas for t in result.clusters}


def test_required_takes_what_others_hold_off_the_quota() -> None:
    for used, expected in (({}, {"member-a": 1, "host-a": 3}), ({"host": 2}, {"member-a": 1, "host-a": 1}),
                           ({"host": 3}, {"member-a": 1}), ({"host": 5, "member": 1}, {}),
                           ({"elsewhere": 9}, {"member-a": 1, "host-a": 3})):  # fmt: skip
        binding = make_binding(4, DYNAMIC, workload_policy=spec("Required"), workload_policy_used=used)
        result = schedule(binding, role_clusters())
        assert result.succeeded and targets(result) == expected, used
    held = schedule(make_binding(4, DYNAMIC, workload_policy=spec("Required"), workload_policy_used={"host": 3}),
                    role_clusters())  # fmt: skip
    assert held.message.endswith(
        "1/4 replicas placed, 3 unplaced: WorkloadPolicy Required: 3 beyond what the quotas on "
        f"{ROLE} leave (member 1, host 3 (3 held by other workloads))."
    )
    [member, host] = held.explanation["division"]["steps"]
    assert (host["value"], host["quota"], host["usedByOthers"], host["wanted"], host["placed"]) == (
        "host",
        3,
        3,
        0,
        0,
    )
    assert (member["usedByOthers"], member["placed"]) == (0, 1)


def test_preferred_sends_what_the_quota_no_longer_has_elsewhere() -> None:
    binding = make_binding(4, DYNAMIC, workload_policy=spec("Preferred"), workload_policy_used={"host": 3})
    result = schedule(binding, role_clusters())
    assert result.succeeded and result.unplaced == 0
    assert targets(result) == {"member-a": 1, "edge": 3}


# -- several bindings of one policy in one plan -------------------------------------------------------------


def workload_policy(kind: str = "Required") -> Manifest:
    return {
        "apiVersion": "kosmos.io/v1alpha1", "kind": "WorkloadPolicy", "metadata": {"name": "split"},
        "spec": {"topologyKey": ROLE, "labelSelector": {"matchLabels": {"app": "web"}},
                 "allocationPolicy": [{"name": "member", "replicas": 1}, {"name": "host", "replicas": 3}],
                 "allocationType": kind, "allocationMethod": "Fill"},
    }  # fmt: skip


CLUSTERS = [cluster("member1", labels={ROLE: "member"}), cluster("host1", labels={ROLE: "host"}),
            cluster("host2", labels={ROLE: "host"})]  # fmt: skip
PP = policy({"replicaScheduling": {"replicaSchedulingType": "Divided",
                                   "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})  # fmt: skip


def web(name: str, replicas: int) -> Manifest:
    return deployment(name, replicas, labels={"app": "web"})


def per_value(bindings: list[Manifest]) -> dict[str, int]:
    value = {"member1": "member", "host1": "host", "host2": "host"}
    totals: dict[str, int] = {}
    for binding in bindings:
        for name, count in placed(binding).items():
            totals[value[name]] = totals.get(value[name], 0) + count
    return totals


def test_two_deployments_together_get_the_quota_not_each() -> None:
    planned = plan_manifests(
        [web("a", 2), web("b", 2), web("c", 2), PP, workload_policy()], CLUSTERS, now=NOW
    )
    a, b, c = planned
    assert placed(a) == {"member1": 1, "host1": 1}
    assert placed(b) == {"host2": 2}  # host1 already runs one replica of a: Fill takes the roomier one
    assert placed(c) == {} and scheduled(c)["reason"] == "Success"
    assert scheduled(c)["message"].endswith(
        "0/2 replicas placed, 2 unplaced: WorkloadPolicy Required: 2 beyond what the quotas on "
        f"{ROLE} leave (member 1 (1 held by other workloads), host 3 (3 held by other workloads))."
    )
    assert per_value(planned) == {"member": 1, "host": 3}
    # Deterministic: the same input plans the same way; the order of the input decides who gets the quota.
    assert (
        plan_manifests([web("a", 2), web("b", 2), web("c", 2), PP, workload_policy()], CLUSTERS, now=NOW)
        == planned
    )
    c_first = plan_manifests(
        [web("c", 2), web("a", 2), web("b", 2), PP, workload_policy()], CLUSTERS, now=NOW
    )
    assert [placed(b) for b in c_first] == [{"member1": 1, "host1": 1}, {"host2": 2}, {}]


def test_replicas_already_placed_for_another_workload_count() -> None:
    docs = [web("old", 4), PP, workload_policy()]
    [old] = plan_manifests(docs, CLUSTERS, now=NOW)
    assert placed(old) == {"member1": 1, "host1": 3}
    assert old["metadata"]["annotations"]["kosmos.io/applied-workload-policy"] == "split/0"
    # The stored binding of "old" is the previous state: "new" is planned first, yet finds the quota taken.
    new, steady = plan_manifests([web("new", 2), *docs, old], CLUSTERS, now=NOW)
    assert (
        placed(steady) == placed(old)
        and steady["status"]["lastScheduledTime"] == old["status"]["lastScheduledTime"]
    )
    assert placed(new) == {}
    assert "(3 held by other workloads)" in scheduled(new)["message"]
    # Preferred: the quota values are full, the replicas still run (on the values' clusters with room).
    preferred = [web("old", 4), PP, workload_policy("Preferred")]
    [old_preferred] = plan_manifests(preferred, CLUSTERS, now=NOW)
    new, _ = plan_manifests([web("new", 2), *preferred, old_preferred], CLUSTERS, now=NOW)
    assert (
        sum(placed(new).values()) == 2
        and scheduled(new)["message"] == "Binding has been scheduled successfully."
    )
