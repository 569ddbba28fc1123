"""What every server-side process sets up for itself, without the API: the secret box, the database's
timeouts, glibc's arenas, the collector, logging, and the controllers. `serve`'s API process imports it
through ``cli.server``; the controllers' child process (``cli.controller_process``) imports only this, so it
does not load FastAPI, uvicorn and the routes (~20 MB of a process's memory)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from federation import gc_tuning
from federation.controllers.runtime import (
    ControllerRunner,
    SystemClock,
    default_identity,
    fix_mmap_threshold,
    leader_fence,
    limit_malloc_arenas,
)
from federation.settings import Settings
from federation.store.crypto import SecretBox, load_or_create_key
from federation.store.db import Timeouts, UnitOfWork, make_engine


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # One line per job run at INFO drowns everything else.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def secret_box(settings: Settings) -> SecretBox:
    if settings.secrets.encryption_key:
        return SecretBox(settings.secrets.encryption_key)
    return SecretBox(load_or_create_key(settings.resolved_key_file()))


def key_source(settings: Settings) -> str:
    """Where the encryption key comes from, as an error message names it."""
    if settings.secrets.encryption_key:
        return "the encryption key in the settings (secrets.encryption_key)"
    return f"the encryption key at {settings.resolved_key_file()}"


def database_timeouts(settings: Settings) -> Timeouts:
    db = settings.database
    return Timeouts(
        connect_seconds=db.connect_timeout_seconds,
        statement_seconds=db.statement_timeout_seconds,
        lock_seconds=db.lock_timeout_seconds,
        sqlite_busy_seconds=db.sqlite_busy_timeout_seconds,
    )


# glibc arenas a server process keeps (``MALLOC_ARENA_MAX``): with glibc's default (8 per core) every
# controller thread ends up with an arena of its own, holding what its last large pass freed.
MALLOC_ARENAS = 2
# Blocks this large or larger get a mapping of their own (``MALLOC_MMAP_THRESHOLD_``): glibc's default,
# kept from rising (``fix_mmap_threshold``).
MALLOC_MMAP_THRESHOLD = 128 * 1024


def tune_malloc() -> None:
    """glibc's allocator for a long-running threaded server, each setting unless the environment sets it:
    ``MALLOC_ARENA_MAX=2`` (measured at 200 bindings, a server's RSS growth 38.5 -> 24.9 MB) and a fixed
    ``MALLOC_MMAP_THRESHOLD_`` (bench/RESULTS.md, stop 40). Called by `serve` and `up` before any thread
    starts."""
    if "MALLOC_ARENA_MAX" not in os.environ:
        limit_malloc_arenas(MALLOC_ARENAS)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        fix_mmap_threshold(MALLOC_MMAP_THRESHOLD)


def tune_collector(settings: Settings) -> None:
    """``gc_tuning.tune`` with the process settings: `serve` and `up` call it once they have started."""
    gc_tuning.tune(settings.process.gc_thresholds, freeze=settings.process.gc_freeze_at_start)


def start_controllers(settings: Settings, uow: UnitOfWork, box: SecretBox) -> ControllerRunner:
    # Imported here: `serve`'s API process, whose controllers run in a child, never loads them.
    from federation.controllers.assembly import ControllerDeps, build_reconcilers
    from federation.controllers.members_access import MemberAccess

    clock = SystemClock()
    identity = default_identity()
    members = MemberAccess(uow, box, settings.members)
    # Every controller write is fenced by the leader lease; the runner's own lease writes are not.
    fenced = uow.guarded(leader_fence(identity, clock))
    deps = ControllerDeps(fenced, settings, clock, identity, box, members)
    runner = ControllerRunner(
        uow,
        build_reconcilers(deps),
        lease_seconds=settings.controllers.leader_lease_seconds,
        identity=identity,
        clock=clock,
        claim_seconds=settings.controllers.claim_lease_seconds,
    )
    runner.start()
    runner.on_stop(members.close)
    return runner


def start_controllers_alone(settings: Settings) -> tuple[ControllerRunner, Callable[[], None]]:
    """The controllers of a process that serves no API (``controller_process``): the database opened as
    `serve` opens it (already migrated by the parent), the runner started; and what disposes the engine."""
    box = secret_box(settings)
    pool = settings.database
    engine = make_engine(
        settings.resolved_database_url(),
        database_timeouts(settings),
        pool_size=pool.pool_size,
        max_overflow=pool.max_overflow,
    )
    try:
        runner = start_controllers(settings, UnitOfWork.for_engine(engine, box), box)
    except BaseException:
        engine.dispose()
        raise
    return runner, engine.dispose
