"""Routes beyond the Kubernetes object paths (join, plan, agent endpoints), registered before the
catch-all `/api` and `/apis` routes so they take precedence. Each feature module adds its `register`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fastapi import FastAPI

if TYPE_CHECKING:
    from federation.api.app import ApiContext

Registration = Callable[[FastAPI, "ApiContext"], None]


def registrations() -> list[Registration]:
    """The feature modules' route registrations (imported here, not at module load, to avoid cycles)."""
    from federation.api import agent, decisions, history, join, plan

    return [join.register, agent.register, plan.register, history.register, decisions.register]


def register_extensions(app: FastAPI, ctx: ApiContext) -> None:
    for register in registrations():
        register(app, ctx)
