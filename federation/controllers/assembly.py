"""Which reconcilers one control-plane process runs, built from settings.

The process that runs both the API and the controllers (`federation serve`/`up`) builds these, hands
them to a `ControllerRunner`, and hands the runner's `wake` to the API as its notifier.
"""

from __future__ import annotations

from dataclasses import dataclass

from federation.controllers.detector import Detector
from federation.controllers.members_access import MemberAccess
from federation.controllers.runtime import Clock, Reconciler
from federation.settings import Settings
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
        ),
    ]
