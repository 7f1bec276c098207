"""A job's request type is the one declaration of its options (issue 29.1, core/requests.py):
the CLI's parser is derived from it, a field added to it is a flag, its JSON is checked in
the CLI's words, and ``--request FILE`` runs what a job's output keeps. No TensorFlow."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import guiapp

from guiapp.cli import build_parser
from guiapp.core.errors import OptionError, UserError
from guiapp.core.events import CancelToken, EventSink
from guiapp.core.generate import resolve_config
from guiapp.core.importers import ImportConfig, ImportJob
from guiapp.core.importers.sources import FORMATS
from guiapp.core.predict.job import PredictConfig
from guiapp.core.requests import (
    ExportRequest,
    GenerateRequest,
    ImportRequest,
    PredictRequest,
    Request,
    add_arguments,
    controls,
    flags,
    from_args,
    load_request,
    opt,
    output_request_path,
    save_request,
    to_argv,
)
from guiapp.core.requests.importing import IMPORT_FORMATS
from guiapp.core.store import Dataset


def command_parser(command: str) -> argparse.ArgumentParser:
    sub = next(
        a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)
    )
    return sub.choices[command]


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    out = set()
    for action in parser._actions:
        out |= set(action.option_strings) or {action.dest}
    return out - {"-h", "--help", "help"}


@pytest.mark.parametrize("cls", [GenerateRequest, PredictRequest, ExportRequest, ImportRequest])
def test_the_cli_options_are_the_request_types_fields(cls: type[Request]) -> None:
    parser = command_parser(cls.COMMAND)
    assert option_strings(parser) == {*flags(cls).values(), "--request"}
    for f in dataclasses.fields(cls):  # each option's default is the field's
        action = next(a for a in parser._actions if a.dest == f.name)
        assert action.default == (None if f.default is dataclasses.MISSING else f.default)


def test_argv_round_trips_through_the_derived_parser() -> None:
    parser = command_parser("generate")
    req = GenerateRequest(
        out="x.h5",
        generator="kmer1d",
        n=300,
        shape="20",
        seed=7,
        workers=2,
        params={"k": 5},
        augment={"copies": 2, "ops": []},
        on_nonfinite="skip",
        overwrite=True,
    )
    argv = to_argv(req)
    assert argv[0] == "x.h5" and "--overwrite" in argv and "--seed" in argv
    back = from_args(GenerateRequest, parser.parse_args(argv))
    assert back.replace(params=req.params, augment=req.augment) == req
    assert json.loads(str(back.params)) == {"k": 5}  # the CLI's JSON text, parsed by the job
    p = command_parser("predict")
    pred = PredictRequest(model="run", data="d.h5", out="p.csv", top_k=3, rc_average=True)
    assert from_args(PredictRequest, p.parse_args(to_argv(pred))) == pred


def test_an_import_command_line_round_trips_through_its_request(tmp_path: Path) -> None:
    """``guiapp import``'s arguments make the request, the request its arguments and its
    JSON; the job's config is built from it in one place, as the command always read it."""
    assert IMPORT_FORMATS == FORMATS  # the request's choices are the importers' formats
    # the job's config reads the request by field name: each of its fields is an option
    assert {f.name for f in dataclasses.fields(ImportConfig)} <= set(flags(ImportRequest))
    parser = command_parser("import")
    argv = ["r.tsv", "k.h5", "--format", "tsv", "--label-field", "cls", "--delimiter", ";",
            "--group-field", "acc", "--keep-fields", "_id,name", "--length", "9", "--pad",
            "pre", "--pad-value", "2", "--class-names", "a, b", "--on-error", "skip",
            "--seed", "5", "--workers", "3", "--memory-mb", "64", "--shard-rows", "100",
            "--compression", "lzf", "--overwrite"]  # fmt: skip
    req = from_args(ImportRequest, parser.parse_args(argv))
    assert (req.src, req.out, req.format, req.length, req.pad_value) == (
        "r.tsv", "k.h5", "tsv", 9, 2.0
    )  # fmt: skip
    assert from_args(ImportRequest, parser.parse_args(to_argv(req))) == req
    assert ImportRequest.from_json(req.to_json()) == req.replace(overwrite=False)
    cfg = ImportConfig.from_request(req)
    assert (cfg.src, cfg.out, cfg.labels, cfg.delimiter) == (Path("r.tsv"), Path("k.h5"), None, ";")
    assert (cfg.class_names, cfg.keep_fields, cfg.group_field) == (
        ["a", "b"],
        ["_id", "name"],
        "acc",
    )
    assert (cfg.pad_value, type(cfg.pad_value), cfg.workers, cfg.compression) == (2, int, 3, "lzf")
    assert (cfg.memory_mb, cfg.shard_rows, cfg.on_error, cfg.overwrite) == (64, 100, "skip", True)
    plain = ImportConfig.from_request(from_args(ImportRequest, parser.parse_args(argv[:4])))
    assert plain.compression is None and plain.class_names is None and plain.workers >= 1
    assert plain.params() == {
        **ImportConfig(src=Path("r.tsv"), out=Path("k.h5"), format="tsv").params(),
        "compression": None,
    }


def test_an_import_request_file_is_refused_in_the_commands_words(tmp_path: Path) -> None:
    """A request file's bad value gets the words of the same option on the command line
    (the config and the job check both alike); ``--request`` runs a saved import, and the
    dataset keeps the request that makes it again."""
    src = tmp_path / "a.jsonl"
    src.write_text("".join(f'{{"label": "{"ab"[i % 2]}", "data": [{i}, 1]}}\n' for i in range(40)))
    parser = command_parser("import")
    base = ImportRequest(src=str(src), out=str(tmp_path / "k.h5"), format="jsonl")
    path = tmp_path / "r.json"

    def job(req: ImportRequest) -> None:
        ImportJob(ImportConfig.from_request(req), EventSink(), CancelToken())

    for key, value, flag in (("workers", "x", "--workers"), ("workers", "0", "--workers"),
                             ("memory_mb", 0, "--memory-mb"), ("shard_rows", 0, "--shard-rows"),
                             ("dtype", "int3", "--dtype")):  # fmt: skip
        save_request(path, base.replace(**{key: value}))
        argv = [str(src), str(tmp_path / "k.h5"), "--format", "jsonl", flag, str(value)]
        from_file = from_args(ImportRequest, parser.parse_args(["--request", str(path)]))
        from_cli = from_args(ImportRequest, parser.parse_args(argv))
        assert from_file == from_cli.replace(src=str(src))
        said = refusal(lambda r=from_cli: job(r))
        assert refusal(lambda r=from_file: job(r)) == said and said.startswith(flag), said
    doc = {"command": "import", "version": 1, "options": {**base.to_json()["options"]}}
    for key, value, words in (
        ("on_error", "stop", "--on-error stop: is not one of the choices; use skip, abort"),
        ("seed", "1", "--seed 1: is not a whole number; give a whole number in r.json"),
        ("format", None, "--format None: missing in r.json; give it in the request"),
    ):
        bad = {**doc, "options": {**doc["options"], key: value}}
        assert refusal(lambda b=bad: ImportRequest.from_json(b, "r.json")) == words
    save_request(path, base.replace(length=4))
    r = guiapp("import", "--request", path, "--events", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with Dataset(tmp_path / "k.h5") as ds:
        assert (len(ds), ds.sample_shape) == (40, (4,))
    kept = tmp_path / "k.shards" / "request.json"  # in the dataset's own folder
    assert load_request(kept, ImportRequest) == base.replace(length=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "k.h5", "k.shards", "r.json"]


def test_a_field_added_to_a_request_type_is_a_flag_a_json_key_and_a_control() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Wider(GenerateRequest):
        noise: float = opt(0.0, help="noise added to every sample", minimum=0, maximum=1)

    parser = argparse.ArgumentParser(prog="guiapp generate")
    add_arguments(parser, Wider)
    assert "--noise" in option_strings(parser) and "--noise" not in flags(GenerateRequest).values()
    req = from_args(Wider, parser.parse_args(["o.h5", "--noise", "0.25", "--n", "9"]))
    assert (req.noise, req.n) == (0.25, 9)
    assert Wider.from_json(req.to_json()) == req
    with pytest.raises(OptionError) as err:
        Wider.from_json({**req.to_json(), "options": {"out": "o.h5", "noise": 2}}, "w.json")
    assert str(err.value) == "--noise 2.0: out of range; give at least 0 and at most 1"
    assert err.value.option == "--noise"
    # a form's controls come from the type: the new field's widget is its option's control
    assert controls(Wider, {"noise": "noise_box", "n": "rows"}) == {
        "--noise": "noise_box",
        "--n": "rows",
    }
    with pytest.raises(KeyError):
        controls(GenerateRequest, {"noise": "noise_box"})


def refusal(call: Any) -> str:
    with pytest.raises(UserError) as err:
        call()
    return str(err.value)


def test_request_files_are_checked_in_the_cli_words(tmp_path: Path) -> None:
    """A request file's value out of range is refused with the message the job's own check
    gives on the command line; a wrong type, a flag given beside --request, an unknown
    option, another command's request: one line each, naming the option."""
    cases = {
        ("top_k", 0): lambda: PredictConfig(model="m", data="d", out="o.h5", top_k=0).check(),
        ("batch", 0): lambda: PredictConfig(model="m", data="d", out="o.h5", batch=0).check(),
        ("min_confidence", 1.5): lambda: PredictConfig(
            model="m", data="d", out="o.h5", min_confidence=1.5
        ).check(),
    }
    base = {"model": "m", "data": "d", "out": "o.h5"}
    for (key, value), core_check in cases.items():
        doc = {"command": "predict", "version": 1, "options": {**base, key: value}}
        assert refusal(lambda d=doc: PredictRequest.from_json(d)) == refusal(core_check)
    for key, value in (("n", 0), ("classes", 0), ("shard_rows", 0), ("seed", -1)):
        doc = {"command": "generate", "version": 1, "options": {"out": "o.h5", key: value}}
        cli = {"n": 10, key: value}
        assert refusal(lambda d=doc: GenerateRequest.from_json(d)) == refusal(
            lambda c=cli: resolve_config("patterns2d", **c)
        )
    doc = {"command": "export", "version": 1, "options": {"run": "r", "format": "x"}}
    assert refusal(lambda: ExportRequest.from_json(doc)) == (
        "--format x: is not one of the choices; use keras, savedmodel, tflite"
    )
    doc = {"command": "export", "version": 1, "options": {"run": "r", "format": "keras", "rows": 0}}
    assert refusal(lambda: ExportRequest.from_json(doc)) == "--rows 0: compare at least 1 row"
    doc = {"command": "generate", "version": 1, "options": {"out": "o.h5", "n": "many"}}
    assert refusal(lambda: GenerateRequest.from_json(doc, "r.json")) == (
        "--n many: is not a whole number; give a whole number in r.json"
    )
    doc = {"command": "predict", "version": 1, "options": base}
    assert "run it with guiapp predict" in refusal(lambda: GenerateRequest.from_json(doc))
    path = tmp_path / "r.json"
    path.write_text('{"command": "generate", "version": 1, "options": {"out": "o.h5",}}')
    assert refusal(lambda: load_request(path, GenerateRequest)).startswith(
        f"{path}: invalid JSON at line 1"
    )
    saved = save_request(path, GenerateRequest(out="o.h5", n=10))
    assert load_request(saved, GenerateRequest) == GenerateRequest(out="o.h5", n=10)
    r = guiapp("generate", "--request", path, "--n", "5")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "--n: given with --request" in r.stderr


def test_a_generated_dataset_keeps_the_request_that_makes_it_again(tmp_path: Path) -> None:
    a = tmp_path / "a.h5"
    r = guiapp("generate", a, "--n", "600", "--shape", "4x4", "--seed", "3", "--params",
               '{"difficulty": 0.2}')  # fmt: skip
    assert r.returncode == 0, r.stderr
    kept = load_request(output_request_path(a), GenerateRequest)
    assert kept.out == str(a) and kept.params == {"difficulty": 0.2} and kept.seed == 3
    b = tmp_path / "sub" / "b.h5"
    save_request(tmp_path / "b.json", kept.replace(out=str(b)))
    r = guiapp("generate", "--request", tmp_path / "b.json", cwd=tmp_path / "..")
    assert r.returncode == 0, r.stderr
    with Dataset(a) as da, Dataset(b) as db:
        assert da.read_range(0, 600)[0].tobytes() == db.read_range(0, 600)[0].tobytes()
    assert load_request(output_request_path(b), GenerateRequest) == kept.replace(out=str(b))


def test_the_request_module_is_stdlib_only() -> None:
    code = (
        "import sys, guiapp.core.requests; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'h5py', 'tensorflow', 'PySide6', 'pydantic'}))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


@pytest.mark.slow
def test_predictions_keep_the_request_that_makes_them_again(tmp_path: Path) -> None:
    """predict keeps PRED.request.json; the same request to another output predicts the
    same table (TensorFlow: slow)."""
    import h5py
    import numpy as np

    data, run = tmp_path / "d.h5", tmp_path / "run"
    assert guiapp("generate", data, "--n", "600", "--shape", "8x8", "--seed", "2").returncode == 0
    r = guiapp("train", "--data", data, "--model", "cnn2d-small", "--out", run, "--batch", "32",
               "--val", "0.3", "--max-steps", "5")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    a = tmp_path / "a.h5"
    r = guiapp("predict", "--model", run, "--data", data, "--out", a, "--split", "val",
               "--top-k", "2", "--batch", "64")  # fmt: skip
    assert r.returncode == 0, r.stderr
    kept = load_request(output_request_path(a), PredictRequest)
    assert (kept.model, kept.out, kept.split, kept.top_k) == (str(run), str(a), "val", 2)
    b = tmp_path / "b.h5"
    save_request(tmp_path / "b.json", kept.replace(out=str(b)))
    r = guiapp("predict", "--request", tmp_path / "b.json", "--top-k", "3")
    assert r.returncode == 2 and "--top-k: given with --request" in r.stderr
    r = guiapp("predict", "--request", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for key in ("row", "pred", "topk_class", "topk_prob"):
            assert np.array_equal(fa[key][()], fb[key][()]), key
