"""Genomes in, organisms out: simulated genomes -> the genomes source -> the seed's kind of
model (Embedding + Conv1D) trained with reverse-complement augmentation -> ``predict`` on
FASTA genomes left out of training, one call per genome; and the exactness of
reverse-complement augmentation and averaging on known sequences."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import guiapp, kmer_cnn
from conftest import trained as trained_run

from guiapp.bench.specs import classifier
from guiapp.core.augment.online import AugmentSpec, augment_numpy
from guiapp.core.genomes.simulate import simulate_genomes, split_manifest
from guiapp.core.genomes.tokenizer import Tokenizer, reverse_complement, tokenize

LAYERS = [
    {"type": "Embedding", "input_dim": 65521, "output_dim": 16},
    {"type": "Conv1D", "filters": 32, "kernel_size": 3, "activation": "relu"},
    {"type": "GlobalMaxPooling1D"},
    {"type": "Dense", "units": 3, "activation": "softmax"},
]
MODEL = classifier("kmer-small", [126], LAYERS, dtype="uint16", learning_rate=0.01)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run trained on 2 genomes of each of 3 species; the third genome of each is
    held out whole (``test.tsv``): none of its reads is trained on."""
    folder = tmp_path_factory.mktemp("genomes")
    m = simulate_genomes(folder / "sim", classes=3, genomes_per_class=3, length=20_000, seed=4)
    train, test = split_manifest(m)
    data = folder / "train.h5"
    params = {"manifest": str(train), "reads_per_genome": 500, "errors": 0.005}
    r = guiapp("generate", data, "--generator", "genomes", "--params", json.dumps(params))
    assert r.returncode == 0, r.stderr
    run = trained_run(folder / "run", data, MODEL, "--epochs", "2", "--batch", "64", "--val",
                      "0.17", "--no-tensorboard", "--augment", '{"reverse": true}')  # fmt: skip
    return run, test


def test_every_held_out_genome_is_called_correctly(trained: tuple[Path, Path]) -> None:
    run, test = trained
    tok = json.loads((run / "config.json").read_text())["dataset"]["tokenizer"]
    assert tok == {"k": 12, "canonical": True, "encoding": "hash", "vocab": 65521, "length": 126}
    out = run.parent / "pred.csv"
    r = guiapp("predict", "--model", run, "--data", test, "--out", out, "--rc-average")
    assert r.returncode == 0, r.stderr
    assert "rows/s" in r.stderr and "3 groups by group" in r.stderr
    with open(out.with_name("pred.groups.csv")) as f:
        genomes = list(csv.DictReader(f))
    assert sorted(g["group"] for g in genomes) == ["ACC00002", "ACC01002", "ACC02002"]
    for g in genomes:
        assert g["mean_class_name"] == g["true_class_name"] == f"species_{g['group'][4]}", g
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert {r["file"] for r in rows} == {"sp0_g2.fa", "sp1_g2.fa", "sp2_g2.fa"}


def test_another_tokenizer_is_refused_in_one_line(trained: tuple[Path, Path]) -> None:
    run, test = trained
    out = run.parent / "other.csv"
    r = guiapp(
        "predict", "--model", run, "--data", test, "--out", out, "--genome-params", '{"k": 10}',
        "--min-confidence", "0.6",  # genome input: the per-genome table is there by default
    )  # fmt: skip
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "--genome-params k 10: the run's tokenizer has k 12" in r.stderr
    assert not out.exists()


def test_reverse_augmentation_is_the_reverse_complement_read() -> None:
    """Each row comes out as it is or reversed, and reversed it is exactly the tokens of
    its read's reverse complement."""
    rng = np.random.default_rng(0)
    tok = Tokenizer(12, True, "hash", 65521)
    reads = rng.integers(0, 4, (64, 137), dtype=np.uint8)
    x = tokenize(reads, tok)
    out = augment_numpy(x, AugmentSpec(reverse=True), np.random.default_rng(1))
    rc = tokenize(reverse_complement(reads), tok)
    same = (out == x).all(axis=1)
    flipped = (out == rc).all(axis=1)
    assert (same | flipped).all() and same.any() and flipped.any()
    with pytest.raises(ValueError, match="reverse needs 1-D rows"):
        AugmentSpec(reverse=True).check_shape((25, 25))


def test_rc_average_gives_a_read_and_its_reverse_complement_the_same_probabilities() -> None:
    import keras
    import tensorflow as tf

    from guiapp.core.predict.engine import make_heads

    keras.utils.set_random_seed(0)
    model = kmer_cnn(8, 8, "Flatten", 3)
    tok = Tokenizer(12, True, "hash", 65521)
    reads = np.random.default_rng(2).integers(0, 4, (32, 137), dtype=np.uint8)
    fwd = tokenize(reads, tok).astype(np.int32)
    rc = tokenize(reverse_complement(reads), tok).astype(np.int32)
    strategy = tf.distribute.get_strategy()
    y = np.zeros(32, np.int32)
    plain = make_heads(model, strategy, 2)
    assert not np.array_equal(plain(fwd, y)[0], plain(rc, y)[0])  # a CNN is not strand-aware
    both = make_heads(model, strategy, 2, rc_average=True)
    p_fwd, p_rc = both(fwd, y)[0], both(rc, y)[0]
    np.testing.assert_allclose(p_fwd, p_rc, rtol=0, atol=1e-6)
    np.testing.assert_allclose(p_fwd, (plain(fwd, y)[0] + plain(rc, y)[0]) / 2, atol=1e-6)


@pytest.mark.slow
def test_bench_genomes_says_in_one_line_when_kraken2_is_missing() -> None:
    """The whole bench on tiny genomes, with no kraken2 on PATH: guiapp's side measured,
    the missing tool named in one line (about a minute: generate, train, predict)."""
    r = guiapp(
        "bench", "genomes", "--reads", "2000", "--species", "2", "--genomes", "2",
        "--length", "5000", "--train-reads", "200", "--test-reads", "50", "--epochs", "1",
        env={"PATH": "/nonexistent"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sum("kraken2 is not installed" in x for x in lines) == 1
    assert any(x.startswith("per-genome accuracy") for x in lines)
    assert "numba" in lines[0] and "numpy" in lines[0]


def test_a_table_predicted_with_rc_average_is_not_resumed_without_it() -> None:
    from guiapp.core.predict.table import TableSpec

    base = TableSpec(10, 3, 2, ("a", "b", "c"), True, False, "m", "m.keras", "d", "d.h5", "all", 4)
    both = TableSpec(**{**base.__dict__, "rc_average": True})
    assert base.identity() != both.identity() and "rc_average" not in base.identity()
