"""Routes beyond the Kubernetes object paths (join, plan, agent endpoints), registered before the
catch-all `/api` and `/apis` routes so they take precedence. Each feature module adds its `register`.

The feature modules import `ApiContext` from `context`, never the app: `app` imports this module, so an
import back into `app` would be a cycle."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from federation.api import agent, decisions, events, history, join, openapi, plan, rejoin
from federation.api.context import ApiContext

Registration = Callable[[FastAPI, ApiContext], None]


def registrations() -> list[Registration]:
    """The feature modules' route registrations, in registration order."""
    return [
        join.register,
        rejoin.register,
        agent.register,
        plan.register,
        history.register,
        decisions.register,
        openapi.register,
        events.register,
    ]


def register_extensions(app: FastAPI, ctx: ApiContext) -> None:
    for register in registrations():
        register(app, ctx)
