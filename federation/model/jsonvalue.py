"""Copying JSON-shaped values (what manifests are made of) fast.

Why: every read of a stored object hands out a private copy (``store.manifest.join``), and controllers
copy again before they edit. ``copy.deepcopy`` pays for its memo and its dispatch on every node; a
marshal round trip does the same work in C, about 7x faster on a 28 KB binding.

Invariant: ``clone(value) == value``, of the same types, sharing no mutable container with it. marshal
accepts only exact built-in types (a dict subclass, a datetime or any other object is refused with
``ValueError``); those values take ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import marshal
from typing import Any, TypeVar

T = TypeVar("T")


def clone(value: T) -> T:
    """A deep copy of a JSON-shaped value."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    plain: Any = value
    try:
        copied: T = marshal.loads(marshal.dumps(plain))
    except ValueError:
        return copy.deepcopy(value)
    return copied
