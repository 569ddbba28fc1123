"""Database URLs: which spellings name Postgres, and the one SQLAlchemy is given (psycopg 3).

Apart from ``store.db`` so that deciding where `serve` runs its controllers (``cli.controller_process``)
imports neither SQLAlchemy nor the store: `serve` decides it before those imports (``cli.cmd_serve``).
"""

from __future__ import annotations

_POSTGRES_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg2://")


def normalize_url(url: str) -> str:
    """Route every Postgres URL through psycopg 3."""
    for prefix in _POSTGRES_PREFIXES:
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_postgres_url(url: str) -> bool:
    """Whether a database URL names Postgres, in any of the spellings ``normalize_url`` takes."""
    return normalize_url(url).startswith("postgresql+psycopg://")
