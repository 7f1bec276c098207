"""Genomes in, organisms out: FASTA/FASTQ genomes as canonical k-mer token rows.

``tokenizer`` (bases -> tokens, compiled), ``seqfile`` (FASTA/FASTQ reading and its
errors), ``manifest`` (which files, classes and groups), ``source`` (the ``genomes``
generator: rows cut from the genomes, groups and kept fields), ``simulate`` (simulated
genomes for tests and the bench). See docs/GENERATION.md, section "genomes".
"""
