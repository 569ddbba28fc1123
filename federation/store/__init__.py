"""The store: SQLAlchemy tables, repositories, unit of work, claiming and leases.

Repositories take a ``Session`` and never commit; ``UnitOfWork`` owns the transaction. API objects go in
and out as plain Kubernetes-shaped dicts. Schema changes go through Alembic (``federation.store.migrate``).
"""

from federation.store.bindings import BindingRepository, EvictionTask, TargetCluster
from federation.store.claims import Claim, claim, release
from federation.store.clusters import ClusterRepository
from federation.store.crypto import SecretBox, generate_key, load_or_create_key
from federation.store.db import UnitOfWork, make_engine, ping, session_factory
from federation.store.decisions import Decision, DecisionRepository
from federation.store.errors import AlreadyExists, Conflict, InvalidContinueToken, NotFound, StoreError
from federation.store.events import Event, EventRepository, InvolvedObject
from federation.store.leases import Lease, LeaseRepository
from federation.store.repository import ObjectRepository, objects
from federation.store.tokens import Token, TokenRepository
from federation.store.works import WorkRepository, execution_namespace

__all__ = [
    "AlreadyExists",
    "BindingRepository",
    "Claim",
    "ClusterRepository",
    "Conflict",
    "Decision",
    "DecisionRepository",
    "Event",
    "EventRepository",
    "EvictionTask",
    "InvalidContinueToken",
    "InvolvedObject",
    "Lease",
    "LeaseRepository",
    "NotFound",
    "ObjectRepository",
    "SecretBox",
    "StoreError",
    "TargetCluster",
    "Token",
    "TokenRepository",
    "UnitOfWork",
    "WorkRepository",
    "claim",
    "execution_namespace",
    "generate_key",
    "load_or_create_key",
    "make_engine",
    "objects",
    "ping",
    "release",
    "session_factory",
]
