"""Bases to k-mer tokens: the one tokenizer of the genomes source and of ``predict``.

A read is ``length + k - 1`` bases coded ``0..3`` (A, C, G, T), ``4`` for ``N`` or another
IUPAC code, ``5`` past the read's end. Its ``length`` k-mers become tokens:

- ``canonical`` (default): a k-mer and its reverse complement share one token (the smaller
  of the two 2-bit codes), so the reverse complement of a read is the same tokens in
  reverse order;
- ``encoding``: ``exact`` gives code + 1 (it needs ``4^k <= vocab - 1``), ``hash`` a
  multiplicative hash of the code into ``1..vocab-1`` (``kmer1d.hash_tokens``), ``auto``
  (default) exact when it fits, else hash;
- a k-mer holding a base coded 4 or 5 becomes 0, the padding token.

:func:`tokenize` is compiled with numba (one pass, rolling codes); :func:`tokenize_numpy`
is the straightforward numpy form it is measured against (``bench/genomes.py``) and that
runs where numba is missing. Both give the same tokens.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UserError

ENCODINGS = ("auto", "exact", "hash")
#: Base codes: 0..3 ACGT; 4 N or another IUPAC code; 5 past the read's end.
N_CODE = 4
END_CODE = 5
IUPAC = "NRYKMSWBDHVU"  # U (RNA) is read as T
#: Byte -> base code; 255 for a byte that is not a nucleotide letter at all.
BASE_CODES = np.full(256, 255, np.uint8)
for _i, _b in enumerate("ACGT"):
    BASE_CODES[ord(_b)] = BASE_CODES[ord(_b.lower())] = _i
for _b in IUPAC:
    BASE_CODES[ord(_b)] = BASE_CODES[ord(_b.lower())] = N_CODE
BASE_CODES[ord("U")] = BASE_CODES[ord("u")] = 3
BASE_CODES[ord("-")] = BASE_CODES[ord(".")] = N_CODE  # alignment gaps
M1 = np.uint64(0x9E3779B97F4A7C15)
M2 = np.uint64(0xBF58476D1CE4E5B9)


@dataclass(frozen=True)
class Tokenizer:
    k: int = 12
    canonical: bool = True
    encoding: str = "auto"  # as asked; :attr:`exact` says what it resolved to
    vocab: int = 65521

    @property
    def exact(self) -> bool:
        fits = 4**self.k <= self.vocab - 1
        if self.encoding == "exact" and not fits:
            raise UserError(
                f"genomes: encoding exact needs 4^k <= vocab - 1, but 4^{self.k} = {4**self.k:,} "
                f"> {self.vocab - 1:,}; use encoding hash (or auto), a smaller k or a larger vocab"
            )
        return self.encoding == "exact" or (self.encoding == "auto" and fits)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint16 if self.vocab <= 65536 else np.uint32)

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "canonical": self.canonical,
            "encoding": "exact" if self.exact else "hash",
            "vocab": self.vocab,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Tokenizer:
        return cls(int(d["k"]), bool(d["canonical"]), str(d["encoding"]), int(d["vocab"]))

    def __call__(self, bases: np.ndarray) -> np.ndarray:
        """``(n, length + k - 1)`` base codes -> ``(n, length)`` tokens."""
        return tokenize(bases, self)


def check_tokenizer(p: dict[str, Any]) -> Tokenizer:
    k, vocab, enc = p["k"], p["vocab"], p["encoding"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 31:
        raise UserError(f"genomes: k {k!r} must be an integer in 1..31")
    if isinstance(vocab, bool) or not isinstance(vocab, int) or not 2 <= vocab <= 2**31:
        raise UserError(f"genomes: vocab {vocab!r} must be an integer in 2..2^31 (default 65521)")
    if enc not in ENCODINGS:
        raise UserError(f"genomes: encoding {enc!r}: use one of {', '.join(ENCODINGS)}")
    t = Tokenizer(k, bool(p["canonical"]), enc, vocab)
    t.exact  # noqa: B018 - raises when exact does not fit
    return t


def _tokenize_loops(
    bases: np.ndarray, k: int, canonical: bool, exact: bool, vocab: int, out: np.ndarray
) -> None:
    n, width = bases.shape
    length = out.shape[1]
    mask = np.uint64((1 << (2 * k)) - 1) if k < 32 else np.uint64(0xFFFFFFFFFFFFFFFF)
    top = np.uint64(2 * (k - 1))
    m1 = np.uint64(0x9E3779B97F4A7C15)
    m2 = np.uint64(0xBF58476D1CE4E5B9)
    mod = np.uint64(vocab - 1)
    for i in range(n):
        fwd = np.uint64(0)
        rev = np.uint64(0)
        good = 0  # valid bases in a row up to here
        for j in range(width):
            b = bases[i, j]
            if b > 3:
                good = 0
                b = 0
            else:
                good += 1
            bb = np.uint64(b)
            fwd = ((fwd << np.uint64(2)) | bb) & mask
            rev = (rev >> np.uint64(2)) | ((np.uint64(3) - bb) << top)
            p = j - k + 1
            if p < 0 or p >= length:
                continue
            if good < k:
                out[i, p] = 0
                continue
            c = fwd
            if canonical and rev < fwd:
                c = rev
            if exact:
                out[i, p] = c + np.uint64(1)
            else:
                h = c * m1
                h ^= h >> np.uint64(29)
                h *= m2
                h >>= np.uint64(32)
                out[i, p] = h % mod + np.uint64(1)
        for p in range(max(0, width - k + 1), length):
            out[i, p] = 0


@functools.cache
def _kernel() -> Callable[..., None] | None:
    """The compiled loops (numba is imported on the first tokenisation, not before), or
    None where numba is missing or turned off (``core/jit.py``)."""
    from ..jit import available, jit

    return jit(_tokenize_loops) if available() else None


def tokenize(bases: np.ndarray, tok: Tokenizer) -> np.ndarray:
    """``(n, length + k - 1)`` uint8 base codes -> ``(n, length)`` tokens (compiled)."""
    kernel = _kernel()
    if kernel is None:
        return tokenize_numpy(bases, tok)
    bases = np.ascontiguousarray(bases, np.uint8)
    out = np.empty((len(bases), max(0, bases.shape[1] - tok.k + 1)), tok.dtype)
    kernel(bases, tok.k, tok.canonical, tok.exact, tok.vocab, out)
    return out


def tokenize_numpy(bases: np.ndarray, tok: Tokenizer) -> np.ndarray:
    """The straightforward numpy form: k shifted passes for the codes of both strands."""
    k = tok.k
    n, width = bases.shape
    length = width - k + 1
    b = np.minimum(bases, N_CODE).astype(np.uint64)
    valid = np.ones((n, length), bool)
    fwd = np.zeros((n, length), np.uint64)
    rev = np.zeros((n, length), np.uint64)
    for j in range(k):
        col = b[:, j : j + length]
        valid &= col < N_CODE
        fwd = (fwd << np.uint64(2)) | (col & np.uint64(3))
        rev |= (np.uint64(3) - (col & np.uint64(3))) << np.uint64(2 * j)
    codes = np.minimum(fwd, rev) if tok.canonical else fwd
    if tok.exact:
        out = codes + np.uint64(1)
    else:
        h = codes * M1
        h ^= h >> np.uint64(29)
        h *= M2
        h >>= np.uint64(32)
        h %= np.uint64(tok.vocab - 1)
        out = h + np.uint64(1)
    out[~valid] = 0
    return out.astype(tok.dtype)


def reverse_complement(bases: np.ndarray) -> np.ndarray:
    """Base codes of the reverse complement (codes 4 and 5 stay as they are)."""
    b = np.asarray(bases)[..., ::-1]
    return np.where(b < N_CODE, 3 - b, b).astype(np.uint8)


def as_codes(text: str | bytes) -> np.ndarray:
    """A sequence's letters as base codes (255 for a byte that is no nucleotide letter)."""
    raw = text.encode("ascii", "replace") if isinstance(text, str) else text
    return BASE_CODES[np.frombuffer(raw, np.uint8)]


def as_bases(codes: np.ndarray) -> str:
    """Base codes back to letters (N for 4, '.' past the end)."""
    return "".join("ACGTN."[int(c)] if c < 6 else "?" for c in codes)
