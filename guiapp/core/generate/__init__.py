"""Generation: built-in and user generators, offline augmentation, the parallel job.

>>> cfg = resolve_config("patterns2d", n=100_000, seed=1)
>>> generate(cfg, "cells.h5", workers=2)

See docs/GENERATION.md for the generators' parameters and the augmentation spec.
"""

from ..augment.offline import Augmenter, load_spec
from .job import GenerationJob, events_log_path, generate, plan_generation
from .job_plan import Plan
from .source import Source
from .spec import BUILTIN, GenConfig, resolve_config

__all__ = [
    "BUILTIN",
    "Augmenter",
    "GenConfig",
    "GenerationJob",
    "Plan",
    "Source",
    "events_log_path",
    "generate",
    "load_spec",
    "plan_generation",
    "resolve_config",
]
