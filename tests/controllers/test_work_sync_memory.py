"""Work sync keeps the manifest statuses of what it applied, not the member's answers (issue 12, memory):
an applied object comes back whole (~8 KB decoded), and a batch's answers were all held until the batch
was recorded. The statuses are taken from each answer as it arrives, the answer dropped."""

from __future__ import annotations

import weakref
from typing import Any

from federation.controllers.work_sync import SyncTask, _apply_to_member
from federation.members.errors import MemberError
from federation.model.status_interpreter import manifest_status
from federation.store.claims import Claim
from tests.members.helpers import deployment


class _Answer(dict[str, Any]):
    """A member's answer to an apply, counted while alive."""

    alive = 0

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        _Answer.alive += 1
        weakref.finalize(self, _Answer._freed)

    @staticmethod
    def _freed() -> None:
        _Answer.alive -= 1


class Member:
    name = "member1"

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        if manifest["metadata"]["name"] == "refused":
            raise MemberError(self.name, "PATCH ...: 422 invalid", kind="invalid", status=422)
        status = {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2}
        return _Answer({**manifest, "status": {**status, "observedGeneration": 1}})


def test_an_apply_keeps_the_statuses_and_drops_the_members_answers() -> None:
    manifests = (deployment("web", 2), deployment("api", 2), deployment("refused", 1))
    task = SyncTask(Claim(1, "uid", "Work", "karmada-es-member1", "w", 1), "member1", manifests)
    result = _apply_to_member(Member(), task)  # type: ignore[arg-type]
    assert _Answer.alive == 0  # nothing of the answers is kept
    answer = Member().apply(manifests[0])
    assert result.statuses[0] == manifest_status(manifests[0], 0, answer)
    assert result.statuses[1]["identifier"]["name"] == "api"
    assert result.statuses[2] == manifest_status(manifests[2], 2, None)  # refused: health Unknown
    assert result.succeeded == 2 and len(result.errors) == 1
