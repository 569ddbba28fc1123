"""Alembic environment: migrates ``federation.store.tables.metadata``.

The URL comes from ``config.attributes["url"]`` (set by ``federation.store.migrate``), else
``FEDERATION_DATABASE_URL``, else ``sqlalchemy.url`` in alembic.ini. SQLite runs in batch mode
(``render_as_batch``) because it cannot ALTER most things in place.
"""

from __future__ import annotations

import os
from logging.config import fileConfig
from typing import Any

from alembic import context

from federation.store.db import MIGRATION_TIMEOUTS, make_engine
from federation.store.migrate import compare_options
from federation.store.tables import metadata
from federation.store.types import UTCDateTime

config = context.config

if config.config_file_name and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name)


def database_url() -> str:
    url = config.attributes.get("url") or os.environ.get("FEDERATION_DATABASE_URL")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: set FEDERATION_DATABASE_URL or sqlalchemy.url")
    return str(url)


def render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    """Render our TypeDecorator as its plain implementation, so revisions don't import the package."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def options(url: str) -> dict[str, Any]:
    return {
        "target_metadata": metadata,
        "render_as_batch": url.startswith("sqlite"),
        "render_item": render_item,
        **compare_options(),
    }


def run_offline() -> None:
    url = database_url()
    context.configure(url=url, literal_binds=True, **options(url))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    url = database_url()
    engine = make_engine(url, MIGRATION_TIMEOUTS)
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, **options(url))
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
