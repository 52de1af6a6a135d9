"""A mined-negative shard: one row per corpus row, the negative training reads in ``mined``.

Columns: ``id``, ``text``, ``augmenter`` ("mine"), ``status`` (ok | dropped), ``reason`` (why a
row has no negative, hardneg.augment.mine.select.REASONS), ``mined`` (the first chosen
neighbour's text: the column training reads), ``mined_id``, ``mined_score`` (cosine),
``mined_rank`` (0 = the nearest other sentence), and every chosen neighbour (``num_negatives``
of them at most, best first) in ``mined_ids`` / ``mined_scores`` / ``mined_ranks``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import polars as pl

from hardneg.augment.mine.select import REASONS, Selection
from hardneg.augment.mine.settings import AUGMENTER

SCHEMA = {
    "id": pl.Int64, "text": pl.String, "augmenter": pl.String, "status": pl.String, "reason": pl.String,
    "mined": pl.String, "mined_id": pl.Int64, "mined_score": pl.Float32, "mined_rank": pl.Int32,
    "mined_ids": pl.List(pl.Int64), "mined_scores": pl.List(pl.Float32), "mined_ranks": pl.List(pl.Int32),
}  # fmt: skip


def build_frame(ids: np.ndarray, texts: list[str], sel: Selection, scores: np.ndarray, positions: np.ndarray,
                unique_ids: np.ndarray, unique_texts: list[str]) -> pl.DataFrame:
    """The shard's rows from a selection over the rows' neighbour windows (``positions`` index
    ``unique_ids``/``unique_texts``: the corpus's distinct texts, first occurrence's id)."""
    rows: dict[str, list[Any]] = {k: [] for k in SCHEMA}
    for r, cols in enumerate(sel.columns):
        n_ids = [int(unique_ids[positions[r, c]]) for c in cols]
        n_scores = [float(scores[r, c]) for c in cols]
        n_ranks = [int(x) for x in sel.ranks[r]]
        first = bool(n_ids)
        rows["id"].append(int(ids[r]))
        rows["text"].append(texts[r])
        rows["augmenter"].append(AUGMENTER)
        rows["status"].append("ok" if first else "dropped")
        rows["reason"].append(sel.reasons[r])
        rows["mined"].append(unique_texts[positions[r, cols[0]]] if first else None)
        rows["mined_id"].append(n_ids[0] if first else None)
        rows["mined_score"].append(n_scores[0] if first else None)
        rows["mined_rank"].append(n_ranks[0] if first else None)
        rows["mined_ids"].append(n_ids)
        rows["mined_scores"].append(n_scores)
        rows["mined_ranks"].append(n_ranks)
    return pl.DataFrame(rows, schema=SCHEMA)


def summarize(frame: pl.DataFrame, sel: Selection, num_negatives: int) -> dict[str, Any]:
    """Counts: rows in = rows out + rows per reason (checked), negatives, what each filter removed."""
    reasons = Counter(r for r in sel.reasons if r is not None)
    out = frame.filter(pl.col("status") == "ok").height
    if out + sum(reasons.values()) != frame.height:
        raise RuntimeError(f"mined rows do not add up: {frame.height} in, {out} out, reasons {dict(reasons)}")
    n_neg = int(frame["mined_ids"].list.len().sum()) if frame.height else 0
    return {
        "rows_in": frame.height,
        "rows_out": out,
        "reasons": {r: reasons.get(r, 0) for r in REASONS},
        "negatives": n_neg,
        "rows_short": int((frame["mined_ids"].list.len().is_between(1, num_negatives - 1)).sum()) if frame.height else 0,
        "skipped_candidates": dict(sorted(sel.skipped.items())),
    }
