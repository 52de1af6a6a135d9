"""Input screening and the quality filter for SAN outputs.

SAN §3.1 notes that mask-predict degrades short inputs into strings like "-.,p."; SAN's
RankCSE/RLRD runs (§3.3, Appendix C, Table 6) replace such low-quality samples by the SNCSE
negation soft negative. Here every check has a named reason, so a dropped or substituted row
says why.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import polars as pl

POSTPROCESS = ("none", "negation")


@dataclass(frozen=True)
class QualityConfig:
    """Thresholds of the output filter and the input screen."""

    min_words: int = 3  # outputs shorter than this are degenerate (the paper's "-.,p." case)
    min_alnum_share: float = 0.5  # share of words containing a letter or digit
    reject_identical: bool = True  # an output equal to its input is no negative
    postprocess: str = "none"  # "negation": substitute the SNCSE soft negative (Appendix C)
    min_latin_share: float = 0.5  # input screen: share of ASCII among alphabetic characters
    max_unk_share: float = 0.5  # input screen: share of [UNK] among word pieces
    max_repeat_run: int = 2  # outputs repeating one word more often in a row ("of of of") fail; 0: off

    def __post_init__(self) -> None:
        if self.postprocess not in POSTPROCESS:
            raise ValueError(f"san.quality.postprocess: '{self.postprocess}' not one of {POSTPROCESS}")
        if self.max_repeat_run < 0:
            raise ValueError(f"san.quality.max_repeat_run: {self.max_repeat_run} must be >= 0")
        for name in ("min_alnum_share", "min_latin_share", "max_unk_share"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:  # also refuses NaN
                raise ValueError(f"san.quality.{name}: {v} not in [0, 1]")


_ASCII_LETTER = re.compile(r"[A-Za-z]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def input_reason(text: str | None, cfg: QualityConfig) -> str | None:
    """Why an input line cannot be augmented (before the MLM runs), or None."""
    if text is None:
        return "null_text"
    if not text.strip():
        return "empty"
    if text.isascii():  # fast path, same answer: ASCII letters are exactly the cased characters
        return None if text.lower() != text.upper() else "no_letters"
    # letters = ASCII letters (exactly [A-Za-z]) + the non-ASCII characters that are alphabetic
    latin = len(_ASCII_LETTER.findall(text))
    letters = latin + sum(map(str.isalpha, _NON_ASCII.findall(text)))
    if not letters:
        return "no_letters"  # emoji-only, numbers-only, punctuation-only
    if latin / letters < cfg.min_latin_share:
        return "non_latin_script"  # not English text; the English MLM/lexicon do not apply
    return None


def unk_reason(n_unk: int, n_pieces: int, cfg: QualityConfig) -> str | None:
    """Reject inputs the tokenizer cannot represent (mostly [UNK])."""
    if n_pieces and n_unk / n_pieces > cfg.max_unk_share:
        return "mostly_unknown_tokens"
    return None


def mostly_unknown(n_unk: np.ndarray, n_pieces: np.ndarray, cfg: QualityConfig) -> np.ndarray:
    """``unk_reason`` over arrays: True where the input is mostly [UNK]."""
    nonzero = n_pieces != 0
    return nonzero & (n_unk / np.where(nonzero, n_pieces, 1) > cfg.max_unk_share)


# a word without a letter or digit: a maximal run of non-space characters none of which is
# alphanumeric ([^\W_] is exactly str.isalnum; \s is exactly what str.split splits on)
_SYMBOL_WORD = re.compile(r"(?<!\S)(?:(?![^\W_])\S)+(?!\S)")


def _longest_run(words: list[str]) -> int:
    """Length of the longest run of one word (case-insensitive) repeated back to back."""
    best = run = 1
    for prev, cur in pairwise(words):
        run = run + 1 if cur.lower() == prev.lower() else 1
        best = max(best, run)
    return best


def output_reason(reference: str, output: str, cfg: QualityConfig) -> str | None:
    """Why a SAN output is low quality, or None. ``reference`` is the input as the MLM saw it."""
    # lowering the whole text lowers each word alike (no case mapping makes or removes a space)
    words = output.lower().split()
    if len(words) < cfg.min_words:
        return "too_short"
    alnum = len(words) - len(_SYMBOL_WORD.findall(output))
    if alnum / len(words) < cfg.min_alnum_share:
        return "mostly_symbols"
    # a repeated run needs two equal neighbours: count those first (C loop), rarely more
    if cfg.max_repeat_run and any(map(operator.eq, words, words[1:])) and _longest_run(words) > cfg.max_repeat_run:
        return "repeated_word"  # mask-predict collapse: "of of of of the"
    if cfg.reject_identical and " ".join(words) == " ".join(reference.lower().split()):
        return "identical_to_input"
    return None


def apply_negation_postprocess(frame: pl.DataFrame, negation: pl.DataFrame | None) -> pl.DataFrame:
    """Rows whose SAN output failed the filter take the negation soft negative (status
    ``substituted``, reason kept); without one they stay ``dropped`` (reason says so)."""
    if negation is None:
        raise ValueError("san.quality.postprocess=negation needs the negation shard (id, negation)")
    missing = {"id", "negation"} - set(negation.columns)
    if missing:
        raise ValueError(f"negation shard lacks column(s) {', '.join(sorted(missing))}")
    neg = negation.select("id", pl.col("negation").alias("_neg"))
    out = frame.join(neg, on="id", how="left", maintain_order="left")
    failed = (pl.col("status") == "dropped") & pl.col("reason").str.starts_with("quality:")
    has_neg = pl.col("_neg").is_not_null()
    return out.with_columns(
        pl.when(failed & has_neg).then(pl.lit("substituted")).otherwise(pl.col("status")).alias("status"),
        pl.when(failed & has_neg)
        .then(pl.col("_neg"))
        .otherwise(pl.col("san"))
        .alias("san"),
        pl.when(failed & ~has_neg)
        .then(pl.col("reason") + pl.lit("; no negation available"))
        .otherwise(pl.col("reason"))
        .alias("reason"),
    ).drop("_neg")
