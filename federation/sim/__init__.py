"""The member-cluster simulator: a Kubernetes API server subset with simulated nodes and pods (KWOK-like).

Public API: ``SimulatorConfig``, ``run_simulator_in_thread(config[, clock=]) -> RunningSimulator`` (url,
token, kubeconfig, ``set_faults``, ``state``, ``stop``), ``Simulator`` (foreground serving) and
``make_kubeconfig``.
"""

from federation.sim.config import SimulatorConfig
from federation.sim.server import (
    RunningSimulator,
    Simulator,
    make_kubeconfig,
    run_simulator_in_thread,
)

__all__ = [
    "RunningSimulator",
    "Simulator",
    "SimulatorConfig",
    "make_kubeconfig",
    "run_simulator_in_thread",
]
