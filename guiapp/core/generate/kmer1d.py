"""``kmer1d``: reads cut from K simulated genomes, as vectors of hashed k-mers (uint16).

Each class is one simulated genome (``genome_length`` bases) drawn once per job from
``genome_seed`` (default: the job's seed): its own base composition (GC content) plus
``motifs`` class-specific motifs planted at random positions. A sample is a read of
``length + k - 1`` bases cut at a random position of its class's genome (reverse
complemented half the time), with sequencing errors; each of its ``length`` k-mers is
encoded as a 2-bit integer and hashed into ``[1, vocab)`` (0 stays free as the padding
token, like Keras ``pad_sequences``). ``difficulty`` in [0, 1] pulls the compositions
together, thins the motifs and adds errors.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np

from ..errors import UserError
from .defaults import with_defaults

DEFAULTS: dict[str, Any] = {
    "shape": [126],
    "classes": 5,
    "difficulty": 0.3,
    "k": 6,
    "vocab": 65521,
    "genome_length": 200_000,
    "motifs": 8,
    "motif_length": 10,
    "motif_density": 0.1,
    "reverse_complement": True,
    "genome_seed": None,
}
GENOME_TAG = 0x6B6D6572  # separates the genome stream from the shard streams


def class_names(classes: int) -> list[str]:
    return [f"genome_{c}" for c in range(classes)]


def _int(p: dict[str, Any], key: str, lo: int, hi: int) -> int:
    v = p[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UserError(f"kmer1d: {key} {v!r} must be an integer in {lo}..{hi}")
    return v


def resolve_params(params: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """Defaults filled in and checked; the result is what the dataset's provenance records."""
    p = with_defaults("kmer1d", params, DEFAULTS)
    shape = [int(s) for s in p["shape"]]
    if len(shape) != 1 or shape[0] < 1:
        raise UserError(f"kmer1d: shape {shape} must be one length, like 126")
    _int(p, "classes", 1, 1000)
    k = _int(p, "k", 1, 31)
    vocab = _int(p, "vocab", 2, 65536)
    dtype = np.dtype(str(p.get("dtype", "uint16")))
    if dtype.kind not in "iu" or np.iinfo(dtype).max < vocab - 1:
        raise UserError(
            f"kmer1d: dtype {dtype} cannot hold token ids up to {vocab - 1}; use uint16 (or int32)"
        )
    _int(p, "motifs", 0, 10_000)
    mlen = _int(p, "motif_length", 1, 1000)
    glen = _int(p, "genome_length", shape[0] + k - 1 + mlen, 10**9)
    d = p["difficulty"]
    if not isinstance(d, (int, float)) or not 0.0 <= float(d) <= 1.0:
        raise UserError(f"kmer1d: difficulty {d!r} must be a number in [0, 1]")
    dens = p["motif_density"]
    if not isinstance(dens, (int, float)) or not 0.0 <= float(dens) <= 1.0:
        raise UserError(f"kmer1d: motif_density {dens!r} must be a number in [0, 1]")
    gseed = seed if p["genome_seed"] is None else _int(p, "genome_seed", 0, 2**63 - 1)
    return {
        **{key: p[key] for key in DEFAULTS},
        "shape": shape,
        "k": k,
        "vocab": vocab,
        "genome_length": glen,
        "difficulty": float(d),
        "motif_density": float(dens),
        "reverse_complement": bool(p["reverse_complement"]),
        "genome_seed": int(gseed),
    }


@functools.lru_cache(maxsize=4)
def _genomes(key: str) -> np.ndarray:
    """(K, genome_length) uint8 bases 0..3 (A, C, G, T), from the parameters alone."""
    p = json.loads(key)
    rng = np.random.default_rng([p["genome_seed"], GENOME_TAG, 1])
    k_cls, glen, d = p["classes"], p["genome_length"], p["difficulty"]
    spread = 0.5 * (1.0 - d)
    out = np.empty((k_cls, glen), dtype=np.uint8)
    for c in range(k_cls):
        gc = 0.5 + spread * ((c + 0.5) / k_cls - 0.5) + rng.uniform(-0.03, 0.03)
        skew = rng.uniform(-0.05, 0.05) * (1.0 - d)
        probs = np.array([(1 - gc) / 2 + skew, gc / 2 - skew, gc / 2 + skew, (1 - gc) / 2 - skew])
        probs = np.clip(probs, 0.01, 1.0)
        out[c] = rng.choice(4, size=glen, p=probs / probs.sum()).astype(np.uint8)
        mlen = p["motif_length"]
        motifs = rng.integers(0, 4, (max(1, p["motifs"]), mlen), dtype=np.uint8)
        planted = int(glen * p["motif_density"] * (1.0 - d) / mlen) if p["motifs"] else 0
        if planted:
            which = rng.integers(0, len(motifs), planted)
            at = rng.integers(0, glen - mlen + 1, planted)
            out[c, at[:, None] + np.arange(mlen)] = motifs[which]
    return out


def generate(
    rng: np.random.Generator, n: int, params: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` vectors ``(n, length)`` uint16 of k-mer token ids and labels ``(n,)`` int32."""
    genomes = _genomes(json.dumps(params, sort_keys=True))
    k_cls, glen = genomes.shape
    length, k = int(params["shape"][0]), int(params["k"])
    read_len = length + k - 1
    y = (np.arange(n) % k_cls)[rng.permutation(n)].astype(np.int32)
    start = rng.integers(0, glen - read_len + 1, n)
    reads = genomes[y[:, None], start[:, None] + np.arange(read_len)]
    if params["reverse_complement"]:
        flip = rng.random(n) < 0.5
        reads[flip] = 3 - reads[flip, ::-1]
    err = 0.002 + 0.05 * float(params["difficulty"])
    hits = rng.random(reads.shape) < err
    reads[hits] = rng.integers(0, 4, int(hits.sum()), dtype=np.uint8)
    codes = np.zeros((n, length), dtype=np.uint64)
    for j in range(k):
        codes <<= np.uint64(2)
        codes |= reads[:, j : j + length]
    return hash_tokens(codes, int(params["vocab"])), y


def hash_tokens(codes: np.ndarray, vocab: int) -> np.ndarray:
    """k-mer codes -> token ids in ``[1, vocab)`` (a multiplicative hash, then modulo)."""
    h = codes * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(29)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h >>= np.uint64(32)
    h %= np.uint64(vocab - 1)
    h += np.uint64(1)
    return h.astype(np.uint16 if vocab <= 65536 else np.uint32)
