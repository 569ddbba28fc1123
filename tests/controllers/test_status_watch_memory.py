"""What an informer keeps per member object costs the size of its projection, not orjson's write buffer:
at 10,000 bindings on 3 members that is 30,000 projections (~120 MB at ~4 KB each before ``kept``)."""

from __future__ import annotations

import tracemalloc
from typing import Any

from federation.controllers.status_watches import project


def deployment(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": "default", "name": f"web-{index}", "generation": 1},
        "spec": {"replicas": 2},
        "status": {
            "observedGeneration": 1,
            "replicas": 2,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "updatedReplicas": 2,
        },
    }


def test_a_kept_projection_holds_about_its_own_size() -> None:
    objects = [deployment(i) for i in range(2000)]
    tracemalloc.start()
    try:
        kept = [project(obj) for obj in objects]
        # What the projection's own lines allocated and still hold, whatever other threads do meanwhile.
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(True, "*/status_watches.py"), tracemalloc.Filter(True, "*/jsoncodec.py")]
        )
    finally:
        tracemalloc.stop()
    held = sum(stat.size for stat in snapshot.statistics("filename"))
    longest = max(len(p) for p in kept)
    assert longest < 400
    assert held / len(kept) < longest + 100  # a bytes object's header; not a 4 KB buffer
