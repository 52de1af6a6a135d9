"""Match Error Rate (Morris et al., 2004): (S+D+I) / (S+D+I+H) over words.

OssCSE (§3.1, Eq. 1) measures surface-structure similarity with MER. This module returns exactly
what ``jiwer.mer`` returns for one pair (same word splitting, same alignment), case-insensitive by
default, but fast: one rapidfuzz C call per pair and no per-opcode Python loop.

Why no opcode loop: for the alignment rapidfuzz returns (the one jiwer uses too),
    dist = S + D + I  (its length)   and   S + D + I + H = dist + H,
so MER = dist / (dist + H), where H (hits) is the total size of the alignment's matching blocks.
Different optimal alignments can have different H, so H must come from that same alignment.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Iterable, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

_editops = Levenshtein.editops
_MULTI_SPACE = re.compile(r"\s\s+")
# Below this many pairs a worker pool costs more than it saves.
_PARALLEL_MIN = 50_000


def words(text: str, lowercase: bool = True) -> list[str]:
    """Words as jiwer's default transform makes them.

    jiwer (``wer_default``): collapse runs of 2+ whitespace characters to one space, strip, split
    on " ". A lone tab or no-break space therefore stays *inside* a word, as in jiwer.
    """
    if lowercase:
        text = text.lower()
    # Every whitespace character except " " is non-printable, so for printable text str.split()
    # (fast, in C) gives exactly jiwer's words; anything else takes jiwer's own steps.
    if text.isprintable():
        return text.split()
    return [w for w in _MULTI_SPACE.sub(" ", text).strip().split(" ") if w]


def _mer_words(ref: Sequence[str], hyp: Sequence[str]) -> float:
    ops = _editops(ref, hyp)
    dist = len(ops)
    hits = 0
    for block in ops.as_matching_blocks():
        hits += block.size
    denom = dist + hits
    # jiwer's edge case: empty reference and empty hypothesis -> 0; otherwise dist/denom.
    return dist / denom if denom else 0.0


def mer(reference: str, hypothesis: str, lowercase: bool = True) -> float:
    """MER between two sentences (0.0 when both have no words)."""
    return _mer_words(words(reference, lowercase), words(hypothesis, lowercase))


def _mer_chunk(args: tuple[list[str], list[str], bool]) -> np.ndarray:
    refs, hyps, lowercase = args
    out = np.empty(len(refs), dtype=np.float64)
    # Millions of short-lived word lists trigger the cyclic GC over and over; none form cycles.
    enabled = gc.isenabled()
    gc.disable()
    try:
        for k, (r, h) in enumerate(zip(refs, hyps)):
            out[k] = _mer_words(words(r, lowercase), words(h, lowercase))
    finally:
        if enabled:
            gc.enable()
    return out


def mer_batch(
    references: Iterable[str],
    hypotheses: Iterable[str],
    lowercase: bool = True,
    n_jobs: int = 1,
) -> np.ndarray:
    """MER for aligned lists of sentences, as a float64 array (same order).

    ``n_jobs`` > 1 splits large batches over that many worker processes (0 = all cores);
    results are identical whatever ``n_jobs`` is.
    """
    refs = list(references)
    hyps = list(hypotheses)
    if len(refs) != len(hyps):
        raise ValueError(f"mer_batch: {len(refs)} references but {len(hyps)} hypotheses")
    for name, seq in (("reference", refs), ("hypothesis", hyps)):
        for k, s in enumerate(seq):
            if not isinstance(s, str):
                # ValueError (not TypeError): the CLI reports it as one clear line.
                raise ValueError(f"mer_batch: {name} {k} is {type(s).__name__}, expected str")  # noqa: TRY004
    n_jobs = (os.cpu_count() or 1) if n_jobs == 0 else max(1, n_jobs)
    if n_jobs == 1 or len(refs) < _PARALLEL_MIN:
        return _mer_chunk((refs, hyps, lowercase))
    import multiprocessing as mp

    global _SHARED
    bounds = np.linspace(0, len(refs), n_jobs + 1).astype(int)
    ranges = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
    if "fork" in mp.get_all_start_methods():
        # Forked workers see the inputs through a module global: nothing is pickled but results.
        _SHARED = (refs, hyps, lowercase)
        try:
            with mp.get_context("fork").Pool(n_jobs) as pool:
                parts = pool.map(_mer_range, ranges)
        finally:
            _SHARED = None
    else:
        chunks = [(refs[a:b], hyps[a:b], lowercase) for a, b in ranges]
        with mp.get_context("spawn").Pool(n_jobs) as pool:
            parts = pool.map(_mer_chunk, chunks)
    return np.concatenate(parts)


_SHARED: tuple[list[str], list[str], bool] | None = None


def _mer_range(bounds: tuple[int, int]) -> np.ndarray:
    a, b = bounds
    refs, hyps, lowercase = _SHARED  # type: ignore[misc]
    return _mer_chunk((refs[a:b], hyps[a:b], lowercase))
