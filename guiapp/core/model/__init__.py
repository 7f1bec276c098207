"""Model specs: JSON data describing a Keras classifier, checked and summarised in pure Python.

A spec is ``{"name", "input": {"shape", "dtype"}, "layers": [...], "loss", "optimizer",
"metrics", "mixed_precision", "seed"}``. ``validate``/``check_spec``/``summarize`` and the
registries import neither TensorFlow nor Keras (the GUI calls them on each edit);
``build_model`` and ``compile_parts`` import Keras when called.
"""

from __future__ import annotations

from .build import build_model, layer_seed
from .compile_parts import compile_parts
from .errors import ModelSpecError, SpecError
from .files import dumps_spec, load_spec, save_spec, spec_from_argument
from .registry import default_layer, layer_params, layer_types
from .resolve import INPUT_DTYPES, ResolvedSpec, resolve
from .summary import ModelSummary, SummaryRow, summarize
from .templates import fit_template, get_template, template_names
from .training_options import (
    LOSSES,
    METRICS,
    optimizer_params,
    optimizer_types,
    schedule_params,
    schedule_types,
)
from .validate import check_spec, input_fits, validate

__all__ = [
    "INPUT_DTYPES",
    "LOSSES",
    "METRICS",
    "ModelSpecError",
    "ModelSummary",
    "ResolvedSpec",
    "SpecError",
    "SummaryRow",
    "build_model",
    "check_spec",
    "compile_parts",
    "default_layer",
    "dumps_spec",
    "fit_template",
    "get_template",
    "input_fits",
    "layer_params",
    "layer_seed",
    "layer_types",
    "load_spec",
    "optimizer_params",
    "optimizer_types",
    "resolve",
    "save_spec",
    "schedule_params",
    "schedule_types",
    "spec_from_argument",
    "summarize",
    "template_names",
    "validate",
]
