"""Schema migrations, run programmatically (``federation db upgrade``; ``serve`` and ``up`` at start).

Invariants:
- Alembic revisions in ``migrations/`` are the only way the schema changes; ``tables.metadata`` and the
  head revision describe the same schema (``drift`` is empty; a test keeps it so on both backends).
- The database URL travels in ``Config.attributes``, never through the ini parser (which would
  interpolate ``%`` in passwords).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import federation
from federation.database_urls import normalize_url
from federation.store.db import make_engine
from federation.store.errors import MigrationsNotFound
from federation.store.tables import metadata


def migrations_dir() -> Path:
    """``migrations/`` next to the ``federation`` package (a source checkout or an editable install)."""
    path = Path(federation.__file__).resolve().parents[1] / "migrations"
    if not (path / "env.py").is_file():
        raise MigrationsNotFound(
            f"Alembic environment not found at {path} (expected env.py there); "
            "run from a source checkout or an editable install (pip install -e .)"
        )
    return path


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["url"] = normalize_url(url)
    config.attributes["configure_logging"] = False
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` up to ``revision`` (creating the schema on an empty database)."""
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    """The revision the database is at, or None for an unmigrated database."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def head() -> str | None:
    """The newest revision in ``migrations/``."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def drift(url: str) -> list[Any]:
    """Differences between the database at ``url`` and ``tables.metadata`` (empty when they agree)."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts=compare_options())
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


def compare_options() -> dict[str, Any]:
    """Autogenerate comparison settings, shared by ``env.py`` and ``drift``."""
    return {"compare_type": True, "compare_server_default": True}
