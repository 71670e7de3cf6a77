"""check — exploring orderings: seeded random runs and bounded-exhaustive enumeration of
the simulator's choice points, with counterexamples that replay."""

from .explore import (
    Execution,
    ExplorationResult,
    explore_exhaustive,
    explore_random,
)
from .scenario_runs import RACE_LABELS, scenario_runner

__all__ = [
    "Execution",
    "ExplorationResult",
    "explore_exhaustive",
    "explore_random",
    "RACE_LABELS",
    "scenario_runner",
]
