"""Where the federation keeps its files by default: plain functions of the environment, importable without
the settings machinery (the CLI's client verbs need the kubeconfig's path and nothing else of it)."""

from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "federation"


KUBECONFIG_NAME = "federation.kubeconfig"


def default_kubeconfig_path() -> Path:
    """The kubeconfig `serve`/`up` write under the default data directory (``FEDERATION_DATA_DIR`` when set):
    what the CLI reads when neither ``--kubeconfig`` nor ``KUBECONFIG`` names one."""
    data_dir = os.environ.get("FEDERATION_DATA_DIR")
    return (Path(data_dir).expanduser() if data_dir else default_data_dir()) / KUBECONFIG_NAME
