"""An augmenter defined outside the package, as a researcher would add one: the sentence with its
words in reverse order, a word-order hard negative (same bag of words, other meaning).

Registered by naming this file in the config's ``augmenters`` list; its rule file
(word_reversal.smk, beside this file) makes one shard per corpus shard.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from hardneg.augment.inspect import mark_changes, sample_rows
from hardneg.augment.units import AugmenterUnit
from hardneg.shards import read_shard

COLUMN = "reversed"


def reverse_words(text: str) -> str | None:
    """The words of ``text`` in reverse order; None for fewer than two words (nothing to reverse)."""
    words = text.split()
    return " ".join(reversed(words)) if len(words) > 1 else None


def reverse_shard(corpus_shard: str | Path, out: str | Path) -> None:
    """The augmentation shard of one corpus shard: every corpus row, kept or dropped with a reason."""
    frame = read_shard(corpus_shard, columns=["id", "text"])
    made = [reverse_words(t) for t in frame["text"].to_list()]
    frame.with_columns(
        pl.Series(COLUMN, made, dtype=pl.String),
        pl.Series("status", ["kept" if m else "dropped" for m in made]),
        pl.Series("reason", [None if m else "fewer_than_two_words" for m in made], dtype=pl.String),
        pl.lit("word_reversal").alias("augmenter"),
    ).write_parquet(out)


def render(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """``hardneg inspect``: originals beside their reversals, changed words [marked]."""
    rows = sample_rows(frame.filter(pl.col("status") == "kept"), sample, seed)
    return "\n".join(f"{r['text']}\n  -> {mark_changes(r['text'], r[COLUMN])}" for r in rows.iter_rows(named=True))


UNIT = AugmenterUnit(
    name="word_reversal",
    column=COLUMN,
    config_section="augmenters",  # no settings of its own
    title="the word_reversal rule",
    rule_file="word_reversal.smk",  # relative to this file
    shard_helper="word_reversal_shard",
    renderer=render,
    render_columns=(COLUMN,),
    view_template="anchor",
)
