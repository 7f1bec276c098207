"""Simulated genomes for tests, the bench and demos: a tree of mutated copies.

One random root genome; each class's ancestor is the root with ``class_divergence`` of its
bases substituted; each genome of a class is its ancestor with ``genome_divergence``
substituted and a few short insertions/deletions, cut into ``contigs`` records, and a few
``N`` runs. Genomes of a class share most k-mers, classes share fewer: the shape of
species and strains, without any real sequence. Written as FASTA (gzip optional) with a
manifest ``file, class, group`` (the group is the genome's accession-like name).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

LETTERS = np.frombuffer(b"ACGT", np.uint8)


def _mutate(rng: np.random.Generator, g: np.ndarray, rate: float, indels: int) -> np.ndarray:
    g = g.copy()
    hit = rng.random(len(g)) < rate
    g[hit] = (g[hit] + rng.integers(1, 4, int(hit.sum()), dtype=np.uint8)) % 4
    for _ in range(indels):
        at = int(rng.integers(0, len(g) - 10))
        if rng.random() < 0.5:
            g = np.delete(g, np.arange(at, at + int(rng.integers(1, 6))))
        else:
            g = np.insert(g, at, rng.integers(0, 4, int(rng.integers(1, 6)), dtype=np.uint8))
    return g


def simulate_genomes(
    folder: str | Path,
    *,
    classes: int = 3,
    genomes_per_class: int = 4,
    length: int = 20_000,
    class_divergence: float = 0.15,
    genome_divergence: float = 0.03,
    contigs: int = 2,
    seed: int = 0,
    gzip_files: bool = False,
) -> Path:
    """Write the genomes and ``manifest.tsv`` into ``folder``; returns the manifest."""
    rng = np.random.default_rng(seed)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    root = rng.integers(0, 4, length, dtype=np.uint8)
    lines = ["file\tclass\tgroup"]
    for c in range(classes):
        ancestor = _mutate(rng, root, class_divergence, 0)
        for j in range(genomes_per_class):
            g = _mutate(rng, ancestor, genome_divergence, 5)
            text = LETTERS[g].copy()
            for _ in range(2):  # a few N runs, as assemblies have
                at = int(rng.integers(0, len(text) - 20))
                text[at : at + int(rng.integers(1, 15))] = ord("N")
            cuts = np.sort(
                rng.choice(np.arange(1000, len(text) - 1000), contigs - 1, replace=False)
            )
            parts = np.split(text, cuts)
            name = f"sp{c}_g{j}"
            body = "".join(
                f">{name}.c{i} simulated\n"
                + "\n".join(p[a : a + 80].tobytes().decode() for a in range(0, len(p), 80))
                + "\n"
                for i, p in enumerate(parts)
            )
            fname = f"{name}.fa" + (".gz" if gzip_files else "")
            data = body.encode()
            (out / fname).write_bytes(gzip.compress(data, mtime=0) if gzip_files else data)
            lines.append(f"{fname}\tspecies_{c}\tACC{c:02d}{j:03d}")
    manifest = out / "manifest.tsv"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def split_manifest(manifest: Path, held_out_per_class: int = 1) -> tuple[Path, Path]:
    """``train.tsv`` and ``test.tsv`` beside ``manifest``: the last genomes of each class
    held out whole."""
    rows = manifest.read_text().splitlines()
    head, body = rows[0], rows[1:]
    by_class: dict[str, list[str]] = {}
    for r in body:
        by_class.setdefault(r.split("\t")[1], []).append(r)
    train, test = [head], [head]
    for rs in by_class.values():
        train += rs[: len(rs) - held_out_per_class]
        test += rs[len(rs) - held_out_per_class :]
    a, b = manifest.with_name("train.tsv"), manifest.with_name("test.tsv")
    a.write_text("\n".join(train) + "\n")
    b.write_text("\n".join(test) + "\n")
    return a, b
