"""Model specs: validation messages, summaries equal to Keras, builds, templates, files."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guiapp.core.errors import UserError
from guiapp.core.model import (
    ModelSpecError,
    build_model,
    check_spec,
    compile_parts,
    default_layer,
    get_template,
    layer_params,
    layer_types,
    load_spec,
    optimizer_params,
    resolve,
    save_spec,
    schedule_params,
    summarize,
    template_names,
    validate,
)
from guiapp.core.model.registry import LAYER_TYPES

REQUIRED_TYPES = {
    "Conv1D", "Conv2D", "SeparableConv1D", "SeparableConv2D", "MaxPooling1D", "MaxPooling2D",
    "AveragePooling1D", "AveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
    "GlobalAveragePooling1D", "GlobalAveragePooling2D", "Dense", "Dropout",
    "BatchNormalization", "LayerNormalization", "Embedding", "Flatten", "Reshape",
    "Activation", "Residual",
}  # fmt: skip


def spec_of(
    layers: list[dict[str, Any]], shape: list[int], dtype: str = "float32"
) -> dict[str, Any]:
    return {"name": "t", "input": {"shape": shape, "dtype": dtype}, "layers": layers}


def messages(spec: Any, **kw: Any) -> list[str]:
    return [e.message for e in validate(spec, **kw)]


def all_layers_spec() -> dict[str, Any]:
    """Every layer type once or more, with projections of all three kinds."""
    c2 = {"type": "Conv2D", "padding": "same"}
    return spec_of(
        [
            {"type": "Embedding", "input_dim": 50, "output_dim": 8},
            {"type": "Reshape", "target_shape": [8, 8, -1]},
            {**c2, "filters": 8, "kernel_size": 3, "activation": "relu"},
            {"type": "SeparableConv2D", "filters": 8, "kernel_size": [3, 2], "padding": "same",
             "depth_multiplier": 2},
            {"type": "BatchNormalization"},
            {"type": "MaxPooling2D", "pool_size": 2},
            {"type": "AveragePooling2D", "pool_size": 2, "strides": 1, "padding": "same"},
            {"type": "Residual", "activation": "relu",
             "layers": [{**c2, "filters": 16, "kernel_size": 3}, {"type": "LayerNormalization"}]},
            {"type": "Residual", "layers": [{**c2, "filters": 16, "kernel_size": 3, "strides": 2}]},
            {"type": "GlobalAveragePooling2D", "keepdims": True},
            {"type": "GlobalMaxPooling2D", "keepdims": True},
            {"type": "Reshape", "target_shape": [4, 4]},
            {"type": "Conv1D", "filters": 8, "kernel_size": 2, "padding": "causal", "dilation_rate": 2},
            {"type": "SeparableConv1D", "filters": 8, "kernel_size": 2, "padding": "same", "use_bias": False},
            {"type": "MaxPooling1D", "pool_size": 2},
            {"type": "AveragePooling1D", "pool_size": 1},
            {"type": "Residual", "layers": [{"type": "Dense", "units": 8, "activation": "relu"}]},
            {"type": "GlobalMaxPooling1D", "keepdims": True},
            {"type": "GlobalAveragePooling1D"},
            {"type": "Flatten"},
            {"type": "Residual", "layers": [{"type": "Dense", "units": 12}]},
            {"type": "BatchNormalization", "center": False},
            {"type": "Dense", "units": 8, "activation": "gelu", "kernel_initializer": "he_normal"},
            {"type": "Dropout", "rate": 0.1},
            {"type": "Activation", "activation": "tanh"},
            {"type": "Dense", "units": 5, "activation": "softmax"},
        ],
        [64],
        "int32",
    )  # fmt: skip


# --- registry -----------------------------------------------------------------------------


def test_registry_lists_every_type_with_plain_metadata() -> None:
    names = {t["name"] for t in layer_types()}
    assert names >= REQUIRED_TYPES
    for name in names:
        meta = layer_params(name)
        json.dumps(meta)  # plain data for the GUI
        assert all({"name", "kind", "default", "doc"} <= set(p) for p in meta)
    conv = {p["name"]: p for p in layer_params("Conv2D")}
    assert conv["padding"]["choices"] == ["valid", "same"]
    assert conv["filters"]["minimum"] == 1 and conv["filters"]["required"]
    assert {p["name"]: p for p in layer_params("Dropout")}["rate"]["exclusive_maximum"]
    json.dumps([optimizer_params("adam"), schedule_params("cosine")])
    with pytest.raises(KeyError, match="did you mean 'Conv2D'"):
        layer_params("conv2d")
    assert set(all_types_in(all_layers_spec()["layers"])) == set(LAYER_TYPES)


def all_types_in(layers: list[dict[str, Any]]) -> list[str]:
    out = []
    for layer in layers:
        out.append(layer["type"])
        out += all_types_in(layer.get("layers", []))
    return out


@pytest.mark.parametrize("kind", sorted(LAYER_TYPES))
def test_default_layer_of_every_type_validates(kind: str) -> None:
    rank = LAYER_TYPES[kind].input_rank
    shape = [8, 8, 4] if rank == 3 else [8, 4]
    layers = [
        default_layer(kind),
        {"type": "Flatten"},
        {"type": "Dense", "units": 3, "activation": "softmax"},
    ]
    if kind == "Reshape":
        layers[0]["target_shape"] = [-1, 2]
    spec = spec_of(
        layers, [8] if kind == "Embedding" else shape, "int32" if kind == "Embedding" else "float32"
    )
    assert messages(spec, num_classes=3) == []


# --- validation messages -------------------------------------------------------------------


def test_unknown_layer_suggests_closest_name() -> None:
    spec = get_template("cnn2d-small")
    spec["layers"][1]["type"] = "MaxPoling2D"
    assert messages(spec) == [
        "layer 1 MaxPoling2D: unknown layer type 'MaxPoling2D'; did you mean 'MaxPooling2D'?"
    ]
    err = validate(spec)[0]
    assert (err.layer, err.param, err.path) == ((1,), "type", "layers[1].type")
    spec["layers"][1] = {"type": "Input"}
    assert 'set by the spec\'s "input" field' in messages(spec)[0]


def test_unknown_parameter_and_wrong_type_and_range() -> None:
    spec = get_template("cnn2d-small")
    spec["layers"][0]["filters"] = "16"
    spec["layers"][2]["kernal_size"] = 3
    spec["layers"][6]["rate"] = 1.5
    spec["layers"][5]["activation"] = "rleu"
    spec["layers"][5]["use_bias"] = 1
    msgs = messages(spec)
    assert "layer 0 Conv2D: filters '16' must be an integer >= 1 (got a string)" in msgs
    assert any(
        m.startswith("layer 2 Conv2D: unknown parameter 'kernal_size'; did you mean 'kernel_size'?")
        for m in msgs
    )
    assert "layer 6 Dropout: rate 1.5 is out of range; it must be in [0, 1)" in msgs
    assert any(
        m.startswith("layer 5 Dense: activation 'rleu' is not one of")
        and "did you mean 'relu'" in m
        for m in msgs
    )
    assert "layer 5 Dense: use_bias 1 must be true or false (got an integer)" in msgs
    assert len(msgs) == 5
    bad = {"type": "Conv2D", "filters": 0, "kernel_size": [3, 3, 3]}
    msgs = messages(spec_of([bad], [5, 5, 1]))
    assert "layer 0 Conv2D: filters 0 is out of range; it must be >= 1" in msgs
    assert "layer 0 Conv2D: kernel_size [3, 3, 3] must have 2 integers" in msgs
    assert messages(spec_of([{"type": "Dense"}], [4])) == [
        "layer 0 Dense: units is required (an integer >= 1)"
    ]


def test_kernel_larger_than_input_names_layer_parameter_and_value() -> None:
    layers = [
        {"type": "Conv2D", "filters": 4, "kernel_size": 3},
        {"type": "MaxPooling2D", "pool_size": 2},
        {"type": "MaxPooling2D", "pool_size": 2},
        {"type": "Conv2D", "filters": 4, "kernel_size": 5},
    ]
    assert messages(spec_of(layers, [14, 14, 1])) == [
        "layer 3 Conv2D: kernel_size 5 is larger than its 3x3 input (padding 'valid'); "
        "use padding 'same', a smaller window, or less pooling before it"
    ]
    layers[3]["padding"] = "same"
    layers += [{"type": "Flatten"}, {"type": "Dense", "units": 2, "activation": "softmax"}]
    assert messages(spec_of(layers, [14, 14, 1])) == []
    one_d = [{"type": "Conv1D", "filters": 2, "kernel_size": 3, "dilation_rate": 3}]
    assert (
        "kernel_size 3 with dilation_rate 3 spans 7 and is larger than its 6-long input"
        in messages(spec_of(one_d, [6, 1]))[0]
    )
    nested = [{"type": "Residual", "layers": [{"type": "Conv1D", "filters": 2, "kernel_size": 9}]}]
    err = validate(spec_of(nested, [6, 1]))[0]
    assert err.message.startswith("layer 0.0 Conv1D: kernel_size 9 is larger than its 6-long input")
    assert err.path == "layers[0].layers[0].kernel_size"


def test_input_shape_must_fit_the_dataset() -> None:
    spec = get_template("cnn2d-small")
    assert validate(spec, input_shape=(25, 25)) == []
    assert validate(spec, input_shape=(25, 25, 1)) == []
    assert messages(spec, input_shape=(28, 28)) == [
        "input: shape [25, 25, 1] does not fit the dataset's samples of shape (28, 28); "
        "a (28, 28) dataset fits input [28, 28] or [28, 28, 1]"
    ]
    flat = get_template("cnn2d-small", input_shape=(25, 25))
    assert flat["input"]["shape"] == [25, 25, 1]
    flat["input"]["shape"] = [25, 25]
    assert messages(flat)[0].startswith(
        "layer 0 Conv2D: needs a 3-D input (height, width, channels) per sample but gets "
        "(25, 25); use input shape [25, 25, 1]"
    )


def test_label_count_must_match_output_units() -> None:
    spec = get_template("cnn2d-small")
    assert messages(spec, num_classes=3) == [
        "layer 7 Dense: units 5 does not match the dataset's 3 classes; the last layer "
        "needs 3 units (one per class)"
    ]
    assert validate(get_template("cnn2d-small", num_classes=3), num_classes=3) == []
    spec["layers"] = spec["layers"][:4]
    assert "a classifier needs one vector per sample" in messages(spec)[0]
    spec = get_template("kmer-conv1d")
    spec["layers"][-1]["activation"] = "relu"
    assert validate(spec) == []
    warning = validate(spec, warnings=True)[0]
    assert warning.severity == "warning" and "does not give probabilities" in warning.message
    check_spec(spec)  # warnings do not raise


def test_embedding_needs_integer_input_and_enough_ids() -> None:
    spec = get_template("kmer-conv1d")
    spec["input"]["dtype"] = "float32"
    assert messages(spec) == [
        "layer 0 Embedding: needs integer token ids but its input is float32; set the input "
        "dtype to the data's integer type (uint16 k-mers: 'uint16' or 'int32')"
    ]
    spec = get_template("kmer-conv1d")
    assert validate(spec, input_shape=(126,), input_dtype="uint16", num_classes=5) == []
    assert "dataset holds float32" in messages(spec, input_dtype="float32")[0]
    spec["layers"][0]["input_dim"] = 4096
    assert validate(spec, input_dtype="uint16") == []
    warn = validate(spec, input_dtype="uint16", warnings=True)
    assert [w.severity for w in warn] == ["warning"] and "need input_dim >= 65521" in warn[
        0
    ].message
    assert messages(spec, input_max=65520) == [
        "layer 0 Embedding: input_dim 4096 is too small for the data's token ids up to 65520; "
        "it must be at least 65521"
    ]
    ints_to_conv = spec_of([{"type": "Conv1D", "filters": 2, "kernel_size": 2}], [8, 1], "uint8")
    assert "only Embedding takes integer token ids" in messages(ints_to_conv)[0]


def test_check_spec_raises_one_user_error_with_every_problem() -> None:
    spec = get_template("cnn2d-small")
    spec["layers"][0]["filters"] = -1
    spec["optimizer"] = {"type": "adamm", "learning_rate": 0.1}
    spec["metrcs"] = ["accuracy"]
    with pytest.raises(ModelSpecError) as info:
        check_spec(spec, source="my.json")
    err = info.value
    assert isinstance(err, UserError) and err.exit_code == 2 and len(err.errors) == 3
    text = str(err)
    assert text.startswith("my.json: 3 problems")
    assert "did you mean 'adam'" in text and "did you mean 'metrics'" in text


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 7), key=st.sampled_from(
    ["type", "filters", "kernel_size", "strides", "padding", "pool_size", "units", "rate",
     "layers", "input_dim", "target_shape", "activation", "junk"]), value=junk,
    top=st.sampled_from(["input", "layers", "optimizer", "loss", "metrics", "seed", None]))  # fmt: skip
def test_validate_never_raises_on_junk(which: int, key: str, value: Any, top: str | None) -> None:
    spec = get_template(["cnn2d-small", "kmer-conv1d"][which % 2])
    spec["layers"][which][key] = value
    if top is not None:
        spec[top] = copy.deepcopy(value)
    problems = validate(spec, input_shape=(25, 25), num_classes=5, warnings=True)
    assert all(p.message.startswith(p.where) for p in problems)


# --- shapes and summaries against Keras ----------------------------------------------------


def test_shape_inference_equals_keras_for_windows() -> None:
    import keras

    cases = 0
    for kind in ("Conv1D", "Conv2D", "SeparableConv1D", "MaxPooling1D", "AveragePooling2D"):
        dims = LAYER_TYPES[kind].spatial or 1
        for n in (5, 6, 9):
            for k in (1, 2, 3):
                for s in (1, 2, 3):
                    for pad in ("valid", "same"):
                        layer: dict[str, Any] = {"type": kind, "padding": pad, "strides": s}
                        if "Pool" in kind:
                            layer["pool_size"] = k
                        else:
                            layer.update(filters=3, kernel_size=k)
                        spec = spec_of([layer], [n] * dims + [2])
                        errs = resolve(spec).errors
                        kl = getattr(keras.layers, kind)(
                            **{k2: v for k2, v in layer.items() if k2 != "type"}
                        )
                        if errs:
                            assert k > n and pad == "valid"
                            continue
                        shape = resolve(spec).output_shape
                        assert shape == tuple(kl.compute_output_shape((None, *[n] * dims, 2))[1:])
                        cases += 1
    assert cases > 150


def _keras_rows_match(spec: dict[str, Any]) -> None:
    model = build_model(spec)
    summary = summarize(spec, batch_size=8)
    assert summary.total_params == model.count_params()
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert summary.trainable_params == trainable
    for row in summary.rows[1:]:
        layer = model.get_layer(row.name)
        assert tuple(layer.output.shape[1:]) == row.output_shape, row.name
        if row.type != "Residual":
            assert layer.count_params() == row.params, row.name


@pytest.mark.parametrize("name", ["cnn2d-small", "kmer-conv1d"])
def test_template_param_counts_equal_keras(name: str) -> None:
    _keras_rows_match(get_template(name))


def test_every_layer_type_param_counts_equal_keras() -> None:
    spec = all_layers_spec()
    assert validate(spec, num_classes=5) == []
    _keras_rows_match(spec)
    summary = summarize(spec, batch_size=8)
    residual_rows = [r for r in summary.rows if r.type == "Residual"]
    assert [r.params for r in residual_rows] == [8 * 16 + 16, 16 * 16 + 16, 0, 8 * 12 + 12]
    assert summary.non_trainable_params == 2 * 8 + 2 * 12  # BatchNormalization moving stats
    conv = next(r for r in summary.rows if r.name == "l02_conv2d")
    assert conv.activation_bytes == 8 * 8 * 8 * 8 * 4 * 2  # output + pre-activation


def test_summary_of_kmer_template() -> None:
    s = summarize(get_template("kmer-conv1d"), batch_size=100)
    assert s.total_params == 7_442_910
    assert [r.output_shape for r in s.rows] == [
        (126,), (126, 100), (122, 25), (61, 25), (59, 30), (29, 30), (870,), (1000,), (5,)
    ]  # fmt: skip
    assert s.rows[0].activation_bytes == 100 * 126 * 2  # uint16 input
    assert s.optimizer_bytes == 2 * 4 * s.trainable_params  # Adam's two slots
    assert "l06_dense" in s.format_table()
    json.dumps(s.to_dict())


# --- building and training -----------------------------------------------------------------


def test_every_choice_is_known_to_keras() -> None:
    import keras

    from guiapp.core.model.registry import ACTIVATIONS, INITIALIZERS

    for name in ACTIVATIONS:
        assert keras.activations.get(name) is not None, name
    for name in INITIALIZERS:
        assert keras.initializers.get(name) is not None, name


def test_every_keras_initializer_name_builds_seeded(tmp_path: Any) -> None:
    """Issue 33.5: the seed's ``kernel_initializer: "normal"`` (and every name Keras takes)
    is accepted and built with the layer's seed: RandomNormal's stddev 0.05, as Keras."""
    from guiapp.core.model.registry import INITIALIZERS

    for name in INITIALIZERS:
        spec = {
            "name": "m", "input": {"shape": [6], "dtype": "float32"},
            "layers": [{"type": "Dense", "units": 6, "kernel_initializer": name},
                       {"type": "Dense", "units": 3, "activation": "softmax"}],
            "loss": "sparse_categorical_crossentropy", "optimizer": {"type": "adam"},
        }  # fmt: skip
        check_spec(spec)  # raises on a refused name
        a, b = build_model(spec), build_model(spec)
        wa, wb = a.get_weights()[0], b.get_weights()[0]
        np.testing.assert_array_equal(wa, wb)  # seeded: the same weights twice
        if name in ("normal", "random_normal"):
            assert 0.03 < float(wa.std()) < 0.07, float(wa.std())
        if name in ("zeros", "zero"):
            assert not wa.any()


@pytest.mark.parametrize("name", ["cnn2d-small", "kmer-conv1d"])
def test_build_and_train_one_batch(name: str) -> None:
    spec = get_template(name)
    model = build_model(spec)
    loss_fn, optimizer, metrics = compile_parts(spec)
    model.compile(optimizer=optimizer, loss=loss_fn, metrics=metrics)
    rng = np.random.default_rng(0)
    shape = tuple(spec["input"]["shape"])
    if name == "kmer-conv1d":
        x = rng.integers(1, 65521, size=(16, *shape)).astype(np.uint16)
    else:
        x = rng.normal(size=(16, *shape)).astype(np.float32)
    y = rng.integers(0, 5, size=16).astype(np.int32)
    loss, acc = model.train_on_batch(x, y)
    assert np.isfinite(loss) and 0.0 <= acc <= 1.0
    assert model.layers[1].name == "l00_" + spec["layers"][0]["type"].lower()


def test_same_seed_same_weights() -> None:
    spec = get_template("cnn2d-small")
    a, b = build_model(spec), build_model(spec)
    for wa, wb in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(wa, wb)
    spec["seed"] = 1
    c = build_model(spec)
    assert not np.array_equal(a.get_weights()[0], c.get_weights()[0])


def test_mixed_precision_outputs_float32() -> None:
    import keras

    spec = get_template("cnn2d-small")
    spec["mixed_precision"] = True
    model = build_model(spec)
    assert keras.mixed_precision.global_policy().name == "float32"  # put back after building
    assert model.get_layer("l00_conv2d").compute_dtype == "float16"
    assert model.get_layer("l00_conv2d").variable_dtype == "float32"
    assert model.output.dtype == "float32"
    loss, optimizer, metrics = compile_parts(spec)
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
    x = np.random.default_rng(1).normal(size=(8, 25, 25, 1)).astype(np.float32)
    out = model.predict_on_batch(x)
    assert out.dtype == np.float32
    assert np.isfinite(model.train_on_batch(x, np.arange(8) % 5)[0])


def test_compile_parts_with_schedules() -> None:
    import keras

    spec = get_template("kmer-conv1d")
    spec["optimizer"] = {"type": "sgd", "learning_rate": 0.1, "momentum": 0.9,
                         "schedule": {"type": "step", "step_size": 10, "factor": 0.5}}  # fmt: skip
    loss, opt, metrics = compile_parts(spec)
    assert isinstance(loss, keras.losses.SparseCategoricalCrossentropy)
    assert isinstance(opt, keras.optimizers.SGD) and opt.momentum == 0.9
    sched = opt._learning_rate
    assert float(sched(25)) == pytest.approx(0.1 * 0.25)
    spec["optimizer"] = {
        "type": "adamw",
        "schedule": {"type": "cosine", "decay_steps": 100, "warmup_steps": 10},
    }
    spec["metrics"] = ["accuracy", "top3_accuracy"]
    _, opt, metrics = compile_parts(spec)
    assert float(opt._learning_rate(10)) == pytest.approx(1e-3)
    assert [m.name for m in metrics] == ["accuracy", "top3_accuracy"]
    spec["optimizer"]["schedule"] = {"type": "exponential", "decay_steps": 0}
    assert messages(spec) == ["optimizer.schedule: decay_steps 0 is out of range; it must be >= 1"]


# --- templates, files, import cost -----------------------------------------------------------


def test_templates_adapt_to_the_dataset() -> None:
    assert template_names() == ["cnn2d-small", "kmer-conv1d"]
    kmer = get_template("kmer-conv1d", num_classes=7, input_shape=(200,), input_dtype="int32")
    assert kmer["layers"][-1]["units"] == 7 and kmer["input"] == {"shape": [200], "dtype": "int32"}
    assert [layer["type"] for layer in kmer["layers"]] == [
        "Embedding", "Conv1D", "MaxPooling1D", "Conv1D", "MaxPooling1D", "Flatten", "Dense", "Dense"
    ]  # fmt: skip
    assert get_template("kmer-conv1d")["layers"][-1]["units"] == 5  # a fresh copy each time
    with pytest.raises(UserError, match="did you mean 'kmer-conv1d'"):
        get_template("kmer-conv")


def test_load_and_save_specs(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    spec = get_template("cnn2d-small")
    save_spec(spec, path)
    assert load_spec(path) == spec
    assert not [p for p in tmp_path.iterdir() if p.name != "m.json"]  # no temp file left
    path.write_text('{"name": "x",\n "layers": [}\n')
    with pytest.raises(UserError, match=r"m\.json: not valid JSON \(.* at line 2, column 13\)"):
        load_spec(path)
    path.write_text("[1, 2]")
    with pytest.raises(UserError, match="must be a JSON object"):
        load_spec(path)
    with pytest.raises(UserError, match="no such model spec file"):
        load_spec(tmp_path / "missing.json")


def test_validate_and_summarize_import_no_tensorflow() -> None:
    code = textwrap.dedent(
        """
        import sys
        from guiapp.core import model as M
        for name in M.template_names():
            assert M.validate(M.get_template(name)) == []
            M.summarize(M.get_template(name), batch_size=64)
        M.layer_params("Conv2D")
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))
        assert not heavy, heavy
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
