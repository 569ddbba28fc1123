"""Which reconcilers one control-plane process runs, built from settings.

The process that runs both the API and the controllers (`federation serve`/`up`) builds these, hands
them to a `ControllerRunner`, and hands the runner's `wake` to the API as its notifier.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.controllers.application_failover import ApplicationFailover
from federation.controllers.binding_status import BindingStatusController
from federation.controllers.change_log import ChangeLogPruner
from federation.controllers.cluster_status import ClusterStatusController
from federation.controllers.detector import Detector
from federation.controllers.execution import ExecutionController
from federation.controllers.graceful_eviction import GracefulEvictionController
from federation.controllers.isolation import RetryBook
from federation.controllers.maintenance import DatabaseMaintenance
from federation.controllers.members_access import MemberAccess
from federation.controllers.rebalancer import WorkloadRebalancerController
from federation.controllers.retention import decision_retention, event_retention
from federation.controllers.runtime import Clock, Reconciler
from federation.controllers.scheduler import Scheduler
from federation.controllers.taint_manager import TaintManager
from federation.controllers.taint_policy import TaintPolicyController
from federation.controllers.work_status import WorkStatusCollector
from federation.controllers.work_sync import WorkSync
from federation.extenders import build_extenders
from federation.scheduling.planner import engine_config
from federation.settings import Settings
from federation.store.claims import Backoff
from federation.store.crypto import SecretBox
from federation.store.db import UnitOfWork


@dataclass(frozen=True, slots=True)
class ControllerDeps:
    uow: UnitOfWork
    settings: Settings
    clock: Clock
    identity: str
    secret_box: SecretBox
    members: MemberAccess


def build_reconcilers(deps: ControllerDeps) -> list[Reconciler]:
    timing = deps.settings.controllers
    return [
        Detector(
            deps.uow,
            deps.clock,
            deps.identity,
            interval_seconds=timing.detector_interval_seconds,
            batch_size=timing.batch_size,
            claim_seconds=timing.claim_lease_seconds,
            backoff=retry_backoff(deps.settings),
            default_toleration_seconds=(
                deps.settings.failover.default_not_ready_toleration_seconds,
                deps.settings.failover.default_unreachable_toleration_seconds,
            ),
        ),
        Scheduler(
            deps.uow,
            deps.clock,
            deps.identity,
            config=engine_config(deps.settings.scheduler),
            extenders=build_extenders(deps.settings.scheduler.extenders),
            interval_seconds=timing.scheduler_interval_seconds,
            batch_size=timing.batch_size,
            claim_seconds=timing.claim_lease_seconds,
            backoff_initial_seconds=timing.retry_backoff_initial_seconds,
            backoff_max_seconds=timing.retry_backoff_max_seconds,
        ),
        # No setting of its own: it follows the scheduler's pace, and the writes it waits on wake it.
        WorkloadRebalancerController(
            deps.uow, deps.clock, interval_seconds=timing.scheduler_interval_seconds
        ),
        ClusterStatusController(deps.uow, deps.clock, deps.members, timing, deps.settings.members),
        ChangeLogPruner(deps.uow, deps.clock, deps.settings.api.watch_window_seconds),
        event_retention(deps.uow, deps.clock, deps.settings.events),
        decision_retention(deps.uow, deps.clock, deps.settings.decisions),
        *maintenance_reconcilers(deps),
        *failover_reconcilers(deps),
        *execution_reconcilers(deps),
    ]


def maintenance_reconcilers(deps: ControllerDeps) -> list[Reconciler]:
    """VACUUM/ANALYZE where the Postgres server has no autovacuum (``store.maintenance``)."""
    database = deps.settings.database
    if not database.self_maintenance or not deps.uow.is_postgres():
        return []
    return [DatabaseMaintenance(deps.uow, interval_seconds=database.maintenance_interval_seconds)]


def failover_reconcilers(deps: ControllerDeps) -> list[Reconciler]:
    """Taints and failing workloads → evictions → graceful removal of the old copies."""
    settings = deps.settings.failover
    return [
        # Woken by every Cluster write (status included); the interval is the safety net.
        TaintPolicyController(
            deps.uow, deps.clock, interval_seconds=deps.settings.controllers.status_interval_seconds
        ),
        TaintManager(deps.uow, deps.clock, settings),
        ApplicationFailover(deps.uow, deps.clock, settings, batch_size=deps.settings.controllers.batch_size),
        GracefulEvictionController(
            deps.uow,
            deps.clock,
            timeout_seconds=deps.settings.controllers.graceful_eviction_timeout_seconds,
            interval_seconds=settings.interval_seconds,
        ),
    ]


def execution_reconcilers(deps: ControllerDeps) -> list[Reconciler]:
    """Bindings -> Works -> members -> Work status -> binding and template status."""
    timing = deps.settings.controllers
    return [
        ExecutionController(
            deps.uow,
            deps.clock,
            interval_seconds=timing.execution_interval_seconds,
            batch_size=timing.batch_size,
            retries=RetryBook(retry_backoff(deps.settings)),
        ),
        WorkSync(
            deps.uow,
            deps.clock,
            deps.identity,
            deps.members,
            interval_seconds=timing.work_sync_interval_seconds,
            batch_size=timing.batch_size,
            claim_seconds=timing.claim_lease_seconds,
            backoff_initial_seconds=timing.retry_backoff_initial_seconds,
            backoff_max_seconds=timing.retry_backoff_max_seconds,
        ),
        WorkStatusCollector(
            deps.uow,
            deps.clock,
            deps.members,
            interval_seconds=timing.status_interval_seconds,
            watch_members=deps.settings.members.status_watch,
        ),
        # No setting of its own: it follows the execution controller's pace.
        BindingStatusController(
            deps.uow,
            deps.clock,
            interval_seconds=timing.execution_interval_seconds,
            batch_size=timing.batch_size,
            retries=RetryBook(retry_backoff(deps.settings)),
        ),
    ]


def retry_backoff(settings: Settings) -> Backoff:
    """How long a failing item waits before its next attempt (the same rule for every controller)."""
    timing = settings.controllers
    return Backoff(timing.retry_backoff_initial_seconds, timing.retry_backoff_max_seconds)
