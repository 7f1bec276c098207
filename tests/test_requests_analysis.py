"""The requests of the GUI's explain, embed, labels, check and ``train --spec`` jobs
(core/requests/analysis.py) cannot drift from the CLI: each field is an option of the
command's real parser with its flag, type and default, and the argument list a request
makes is the one the GUI ran when it built them by hand. No TensorFlow."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from guiapp.cli import build_parser
from guiapp.core.requests import (
    CheckRequest,
    EmbedRequest,
    ExplainRequest,
    LabelsRequest,
    Request,
    TrainSpecRequest,
    default_of,
    flag_of,
    is_required,
    job_argv,
    option,
    to_argv,
    train_output,
    with_resume,
)
from guiapp.core.requests.base import _kinds

TYPES = [ExplainRequest, EmbedRequest, LabelsRequest, CheckRequest, TrainSpecRequest]


def command_parser(command: str) -> argparse.ArgumentParser:
    sub = next(
        a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)
    )
    parser: argparse.ArgumentParser = sub.choices[command]
    return parser


def action_of(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    for action in parser._actions:
        if flag in action.option_strings or (not action.option_strings and action.dest == flag):
            return action
    raise AssertionError(f"{flag} is not an option of guiapp {parser.prog.split()[-1]}")


@pytest.mark.parametrize("cls", TYPES, ids=lambda c: c.__name__)
def test_each_field_is_an_option_of_the_commands_parser(cls: type[Request]) -> None:
    parser = command_parser(cls.COMMAND)
    for f in dataclasses.fields(cls):
        action = action_of(parser, flag_of(f))
        assert action.dest == f.name, f.name
        assert (not action.option_strings) == option(f).positional, f.name
        kinds = set(_kinds(cls, f.name)) - {type(None)}
        if kinds == {bool}:
            assert isinstance(action, argparse._StoreTrueAction), f.name
        else:
            assert action.nargs is None and action.const is None, f.name  # one value
            assert (action.type or str) in kinds, f.name
        choices = option(f).choices
        given = action.choices
        assert (tuple(given) if given is not None else None) == choices, f.name
        if is_required(f):  # required here; the CLI requires it or has no default
            assert action.required or action.default is None, f.name
        else:
            assert action.default == default_of(f), f.name


#: What the GUI ran before it built requests (the literal lists of ui/ at b738b9b).
BEFORE: list[tuple[Request, list[str]]] = [
    (
        ExplainRequest(model="runs/a", data="d.h5", rows="17", target="pred"),
        ["--model", "runs/a", "--data", "d.h5", "--rows", "17", "--class", "pred"],
    ),
    (
        ExplainRequest(model="runs/a", data="d.h5", rows="0", target="blob"),
        ["--model", "runs/a", "--data", "d.h5", "--rows", "0", "--class", "blob"],
    ),
    (
        EmbedRequest(model="runs/a", data="d.h5", out="runs/a/explain/embedding-d.h5"),
        ["--model", "runs/a", "--data", "d.h5", "--out", "runs/a/explain/embedding-d.h5"],
    ),
    (
        LabelsRequest(experiment="runs/cv", out="runs/cv/labels.csv", all=True),
        ["--experiment", "runs/cv", "--out", "runs/cv/labels.csv", "--all"],
    ),
    (CheckRequest(path="/p/data/d.h5", json=True), ["/p/data/d.h5", "--json"]),
    (TrainSpecRequest(spec="/p/runs/r/spec.json"), ["--spec", "/p/runs/r/spec.json"]),
    (
        TrainSpecRequest(spec="/p/runs/r/spec.json", resume=True),
        ["--spec", "/p/runs/r/spec.json", "--resume"],
    ),
]


@pytest.mark.parametrize("request_, before", BEFORE)
def test_a_request_runs_the_arguments_the_gui_built_by_hand(
    request_: Request, before: list[str]
) -> None:
    argv = to_argv(request_)
    assert argv == before
    parsed = command_parser(request_.COMMAND).parse_args(argv)  # and they mean the request
    for f in dataclasses.fields(request_):
        assert getattr(parsed, f.name) == getattr(request_, f.name), f.name


def test_the_job_plumbing_keeps_its_arguments() -> None:
    args = to_argv(TrainSpecRequest(spec="r/spec.json"))
    assert job_argv("train", args) == ["train", "--spec", "r/spec.json", "--events", "-"]
    assert job_argv("check", ["d.h5", "--json"], events=False) == ["check", "d.h5", "--json"]
    assert with_resume(["x.h5", "--overwrite"]) == ["x.h5", "--overwrite", "--resume"]
    assert with_resume(["--spec", "s", "--resume"]) == ["--spec", "s", "--resume"]
    assert train_output(args, "/p") == Path("/p/r")
    assert train_output([*args, "--out", "/q/run"], "/p") == Path("/q/run")
    assert train_output(["--data", "d.h5"], "/p") is None
    assert train_output(["--spec"], "/p") is None  # no value: nothing named
