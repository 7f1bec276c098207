"""The genomes source: its tokenizer against an independent reference, FASTA/FASTQ and
manifest reading with their errors, and the rows it generates (groups, kept fields)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ENV, guiapp

from guiapp.core.errors import UserError
from guiapp.core.generate import resolve_config
from guiapp.core.genomes.seqfile import read_sequences
from guiapp.core.genomes.simulate import simulate_genomes
from guiapp.core.genomes.tokenizer import (
    Tokenizer,
    as_codes,
    reverse_complement,
    tokenize,
    tokenize_numpy,
)
from guiapp.core.store import Dataset
from guiapp.core.store.columns import group_names, name_groups, read_column

COMP = {"A": "T", "C": "G", "G": "C", "T": "A"}
MASK64 = (1 << 64) - 1


def ref_token(kmer: str, tok: Tokenizer) -> int:
    """One k-mer's token, from its letters, in plain Python integers."""
    if len(kmer) < tok.k or any(c not in "ACGT" for c in kmer):
        return 0
    if tok.canonical:
        rc = "".join(COMP[c] for c in reversed(kmer))
        kmer = min(kmer, rc)  # A < C < G < T: the smaller string is the smaller code
    code = 0
    for c in kmer:
        code = code * 4 + "ACGT".index(c)
    if 4**tok.k <= tok.vocab - 1 and tok.encoding in ("auto", "exact"):
        return code + 1
    h = (code * 0x9E3779B97F4A7C15) & MASK64
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & MASK64
    return (h >> 32) % (tok.vocab - 1) + 1


def ref_row(seq: str, length: int, tok: Tokenizer) -> list[int]:
    """A read's ``length`` tokens: k-mers past its end are padding (0)."""
    seq = seq.upper()
    return [ref_token(seq[i : i + tok.k], tok) for i in range(length)]


def rows_of(seqs: list[str], length: int, k: int) -> np.ndarray:
    """Base codes ``(n, length + k - 1)``, past each read's end code 5."""
    out = np.full((len(seqs), length + k - 1), 5, np.uint8)
    for i, s in enumerate(seqs):
        c = as_codes(s)[: length + k - 1]
        out[i, : len(c)] = c
    return out


SEQS = [
    "ACGTACGTTGCA",
    "acgtNNacgtRYacgtTTTTGGGGCCCCAAAA",  # lowercase, N, IUPAC R and Y
    "GATTACA",  # shorter than a row
    "AC",  # shorter than one k-mer
    "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT",
    "CCGGAATTCCGGAATTNCCGGAATT",
]


@pytest.mark.parametrize(
    "tok",
    [
        Tokenizer(3, True, "auto", 65521),  # exact, canonical
        Tokenizer(3, False, "exact", 100),  # exact, forward only
        Tokenizer(4, True, "hash", 65521),  # hashed although it would fit
        Tokenizer(5, False, "hash", 97),  # hashed into a small vocabulary
        Tokenizer(12, True, "auto", 65521),  # 4^12 does not fit: hashed
        Tokenizer(9, True, "auto", 2**20),  # 4^9 fits a large vocabulary: exact, uint32
    ],
)
def test_tokens_equal_an_independent_reference(tok: Tokenizer) -> None:
    length = 20
    bases = rows_of(SEQS, length, tok.k)
    want = np.array([ref_row(s, length, tok) for s in SEQS])
    assert (tokenize(bases, tok) == want).all()
    assert (tokenize_numpy(bases, tok) == want).all()
    assert want.max() < tok.vocab and (want[0, : 12 - tok.k + 1] > 0).all()


def test_reverse_complement_is_the_same_tokens_reversed() -> None:
    rng = np.random.default_rng(1)
    tok = Tokenizer(7, True, "hash", 65521)
    bases = rng.integers(0, 4, (50, 126 + 6), dtype=np.uint8)
    bases[3, 40] = 4  # an N: its k-mers are 0 on both strands
    fwd, rev = tokenize(bases, tok), tokenize(reverse_complement(bases), tok)
    assert (fwd[:, ::-1] == rev).all() and (fwd[3] == 0).sum() == 7
    plain = Tokenizer(7, False, "hash", 65521)
    assert not (tokenize(bases, plain)[:, ::-1] == tokenize(reverse_complement(bases), plain)).all()
    assert as_codes("GATTACA").tolist() == reverse_complement(as_codes("TGTAATC")).tolist()


def test_exact_that_does_not_fit_is_refused_in_one_line(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    with pytest.raises(UserError, match=r"encoding exact needs 4\^k <= vocab - 1.*use encoding"):
        resolve_config("genomes", n=None, params={"manifest": str(m), "encoding": "exact"})


def write(path: Path, text: str, gz: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def genome(rng: np.random.Generator, n: int) -> str:
    return "".join(np.array(list("ACGT"))[rng.integers(0, 4, n)])


def manifest(tmp_path: Path, gz: bool = False) -> Path:
    rng = np.random.default_rng(5)
    lines = ["file\tclass\tgroup"]
    for c, name in enumerate(["ecoli", "bsub"]):
        for j in range(2):
            contigs = [genome(rng, 900 + 100 * j), genome(rng, 400)]
            text = "".join(
                f">{name}{j}_c{i} x\n{s[:300]}\n{s[300:]}\n" for i, s in enumerate(contigs)
            )
            f = write(tmp_path / (f"{name}{j}.fa" + (".gz" if gz else "")), text, gz)
            lines.append(f"{f.name}\t{name}\tACC{c}{j}")
    return write(tmp_path / "m.tsv", "\n".join(lines) + "\n")


def test_fasta_and_fastq_read_as_records(tmp_path: Path) -> None:
    fa = write(tmp_path / "a.fa.gz", ">one desc\nACGT\nacgn\n>two\nTTTT\n", gz=True)
    s = read_sequences(fa)
    assert s.names == ["one", "two"] and s.starts.tolist() == [0, 8, 12] and not s.fastq
    assert s.record(0).tolist() == [0, 1, 2, 3, 0, 1, 2, 4]
    fq = write(tmp_path / "r.fq", "@r1\nACGT\n+\nIIII\n@r2 x\nGG\n+r2\nII\n")
    q = read_sequences(fq)
    assert q.fastq and q.names == ["r1", "r2"] and q.lengths.tolist() == [4, 2]


BAD = [
    ("empty.fa", "", "empty.fa: is empty"),
    ("prose.fa", "hello world\n", "prose.fa, line 1: is neither FASTA"),
    ("protein.fa", ">p\nACGT\nMKVLEF\n", "protein.fa, line 3: 'L' at column 4 is not a nucleotide"),
    ("cut.fq", "@r1\nACGT\n+\nIIII\n@r2\nACGT\n", "cut.fq, line 5: a FASTQ record is cut short"),
    ("qual.fq", "@r1\nACGT\n+\nIII\n", "qual.fq, line 4: 3 quality values for 4 bases"),
    ("short.fa", ">s\nACGTACGTAC\n", "short.fa: no record is as long as one read"),
]


@pytest.mark.parametrize("name,text,expected", BAD)
def test_bad_sequence_files_name_file_and_line(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    write(tmp_path / name, text)
    m = write(tmp_path / "m.tsv", f"{name}\tx\n")
    with pytest.raises(UserError) as e:
        resolve_config("genomes", n=None, params={"manifest": str(m)})
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_manifest_errors_and_iupac_policy(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    missing = write(tmp_path / "bad.tsv", m.read_text() + "nowhere.fa\tecoli\n")
    with pytest.raises(UserError, match=r"bad.tsv, line 6: names nowhere.fa, which does not exist"):
        resolve_config("genomes", n=None, params={"manifest": str(missing)})
    with pytest.raises(UserError, match=r"m.tsv, line 4: class 'bsub' is not one of the classes"):
        resolve_config(
            "genomes", n=None, params={"manifest": str(m), "class_names": ["ecoli", "x"]}
        )
    write(tmp_path / "ecoli0.fa", ">a\n" + "ACGT" * 100 + "\nACRT" + "A" * 200 + "\n")
    with pytest.raises(UserError, match=r"ecoli0.fa, line 3: 'R' at column 3 is not A, C, G or T"):
        resolve_config("genomes", n=None, params={"manifest": str(m), "non_acgt": "error"})


def test_cli_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    write(tmp_path / "cut.fq", "@r1\nACGT\n+\nIIII\n@r2\nAC\n")
    m = write(tmp_path / "m.tsv", "cut.fq\tx\n")
    out = tmp_path / "out.h5"
    r = guiapp("generate", out, "--generator", "genomes", "--params", f'{{"manifest": "{m}"}}')
    assert r.returncode == 2 and "cut.fq, line 5: a FASTQ record is cut short" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not out.exists() and {p.name for p in tmp_path.iterdir()} == {"cut.fq", "m.tsv"}


def test_rows_carry_class_group_and_kept_fields_that_point_at_their_bases(tmp_path: Path) -> None:
    m = manifest(tmp_path, gz=True)
    out = tmp_path / "g.h5"
    params = json.dumps({"manifest": str(m), "k": 5, "reads_per_genome": 50, "errors": 0})
    r = guiapp("generate", out, "--generator", "genomes", "--params", params, "--shape", "40")
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert len(ds) == 200 and ds.class_names == ["bsub", "ecoli"]
        x, y = ds.read_range(0, 200)
        g = read_column(ds, "group")
        names = name_groups(g, group_names(ds))
        fields = {c: read_column(ds, c) for c in ("file", "contig", "position", "strand")}
    assert sorted(set(names)) == ["ACC00", "ACC01", "ACC10", "ACC11"]
    assert set(fields["strand"].tolist()) == {b"+", b"-"}
    tok = Tokenizer(5, True, "auto", 65521)
    for i in range(0, 200, 7):
        f = fields["file"][i].decode()
        assert names[i] == {"ecoli0.fa.gz": "ACC00", "ecoli1.fa.gz": "ACC01"}.get(f, names[i]) and (
            y[i] == 1
        ) == f.startswith("ecoli")
        seqs = read_sequences(tmp_path / f)
        rec = seqs.record(seqs.names.index(fields["contig"][i].decode()))
        p = int(fields["position"][i])
        window = rec[p : p + 44]
        if fields["strand"][i] == b"-":
            window = reverse_complement(window)
        assert (tokenize(window[None], tok)[0] == x[i]).all()


# -- determinism: any worker count, SIGKILL then --resume --------------------------------
def start(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "guiapp", *map(str, args), "--events", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def content(path: Path) -> list[bytes]:
    """Every byte a reader sees: rows, labels and each column, in dataset order."""
    with Dataset(path) as ds:
        x, y = ds.read_range(0, len(ds))
        return [x.tobytes(), y.tobytes()] + [
            read_column(ds, c).tobytes() for c in sorted(ds.columns)
        ]


@pytest.fixture(scope="module")
def det(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[bytes]]:
    folder = tmp_path_factory.mktemp("det")
    m = simulate_genomes(folder / "g", classes=2, genomes_per_class=2, length=30_000, seed=2)
    params = {"manifest": str(m), "reads_per_genome": 10_000, "errors": 0.01, "non_acgt": "random"}
    args = ["--generator", "genomes", "--params", json.dumps(params), "--shard-rows", "5000"]
    r = guiapp("generate", folder / "ref.h5", *args, "--workers", "1")
    assert r.returncode == 0, r.stderr
    return args, content(folder / "ref.h5")


def test_same_bytes_for_two_workers_and_after_sigkill_then_resume(
    tmp_path: Path, det: tuple[list[str], list[bytes]]
) -> None:
    args, ref = det
    out = tmp_path / "k.h5"
    proc = start("generate", out, *args, "--workers", "2")
    assert proc.stdout is not None
    for line in proc.stdout:  # killed at its first progress, far from the end (8 shards)
        e = json.loads(line)
        if e["event"] == "progress" and e["rows_done"] > 0:
            break
        assert e["event"] in ("started", "progress"), e
    proc.kill()  # SIGKILL; its workers see their parent gone and stop
    proc.wait(30)
    with Dataset(out) as ds:  # (it ended before the kill landed: nothing was tested)
        assert len(ds) < 40_000 and not ds.complete
    r = guiapp("generate", out, *args, "--workers", "2", "--resume")
    assert r.returncode == 0, r.stderr
    assert content(out) == ref


def test_fastq_reads_as_they_are_and_tiling(tmp_path: Path) -> None:
    """``reads``: one row per FASTQ read, a short one padded with token 0 or left out;
    ``tiling``: one row per stride (two with both strands), tokens of the bases there."""
    from guiapp.core.generate.source import Source

    reads = ["ACGTACGTACGTAC", "ACGTAC", "GGGGCCCCAAAATTTTGG"]  # rows need 10 + 4 bases
    fq = "".join(f"@r{i}\n{s}\n+\n{'I' * len(s)}\n" for i, s in enumerate(reads))
    write(tmp_path / "a.fq.gz", fq, gz=True)
    m = write(tmp_path / "m.tsv", "file\tclass\na.fq.gz\tx\n")
    tok = Tokenizer(5, True, "auto", 65521)
    for short, kept in (("pad", [0, 1, 2]), ("drop", [0, 2])):
        params = {"manifest": str(m), "k": 5, "mode": "reads", "short": short}
        cfg = resolve_config("genomes", n=None, shape=(10,), params=params)
        src = Source(cfg)
        x, _y, _g = next(src.shard(0))
        kept_fields = src.kept
        order = [int(c.decode()[1:]) for c in kept_fields["contig"]]
        assert sorted(order) == kept and (kept_fields["strand"] == b"+").all()
        for row, i in zip(x, order, strict=True):
            assert row.tolist() == ref_row(reads[i], 10, tok)
    assert (ref_row(reads[1], 10, tok)[2:] == [0] * 8) and ref_row(reads[1], 10, tok)[1] > 0
    genome = "".join(np.array(list("ACGT"))[np.random.default_rng(3).integers(0, 4, 64)])
    write(tmp_path / "g.fa", f">chr\n{genome}\n")
    m2 = write(tmp_path / "m2.tsv", "g.fa\tx\n")
    params = {"manifest": str(m2), "k": 5, "mode": "tiling", "stride": 7, "strand": "both"}
    cfg = resolve_config("genomes", n=None, shape=(10,), params=params)
    assert cfg.n == 2 * ((64 - 14) // 7 + 1)
    src = Source(cfg)
    x, _y, _g = next(src.shard(0))
    for row, p, s in zip(x, src.kept["position"], src.kept["strand"], strict=True):
        assert p % 7 == 0
        window = genome[p : p + 14]
        want = ref_row(window, 10, tok)
        assert row.tolist() == (want[::-1] if s == b"-" else want)
