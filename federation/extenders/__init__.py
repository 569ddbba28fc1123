"""HTTP scheduler extenders: the httpx adapter behind ``federation.scheduling.extender.Extender``, the two
wires it speaks and its TLS setup.

Its own import-linter layer, under ``api`` and ``controllers`` and over ``scheduling`` (whose protocol it
implements), so that the scheduler controller and the live plan endpoint call extenders through the same
code: a plan's answer is the scheduler's answer. Public API: ``HttpExtender``, ``build_extenders``,
``close_extenders``.
"""

from federation.extenders.client import HttpExtender, build_extenders, close_extenders

__all__ = ["HttpExtender", "build_extenders", "close_extenders"]
