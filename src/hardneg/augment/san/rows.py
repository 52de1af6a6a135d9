"""SAN shard rows from mask-predict outputs: decode, quality filter, columns (the CPU-only half).

``finish_columns`` is numpy and ``str`` work on one chunk (or a slice of its rows) and touches
neither torch nor polars, so it runs the same inline, in a thread beside the device, or in forked
worker processes (``san.finish_workers``); ``rows_frame`` turns its columns into the shard's
rows in the parent. Rows are independent: slices finished apart and concatenated in order give the
rows of the whole chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from hardneg.augment.quality import QualityConfig, output_reason
from hardneg.augment.san.tokens import Ragged

AUGMENTER = "san"


@dataclass
class Predicted:
    """What ``predict_frame`` hands to ``finish_columns``: the chunk's n input rows and, for the
    rows that ran (``keep``, ascending), the ids of every iteration and the masked positions."""

    ids: np.ndarray  # (n,) int64 row ids
    texts: list  # n input texts
    reason: list  # n: None, or why the input was dropped ("input:...")
    truncated: np.ndarray  # (n,) bool
    keep: np.ndarray  # int64 indices (into the n rows) of the rows that ran
    seqs: list  # Ragged token ids per iteration, 0 = the input; rows = keep
    masks: list  # Ragged masked positions per iteration 1..K; rows = keep
    decoded: dict  # iteration -> texts already decoded (retokenize needs them on the way)

    def __len__(self) -> int:
        return len(self.texts)

    def slice(self, lo: int, hi: int) -> Predicted:
        """Rows lo..hi-1 (what a worker finishes)."""
        a, b = np.searchsorted(self.keep, [lo, hi])
        return Predicted(self.ids[lo:hi], self.texts[lo:hi], self.reason[lo:hi], self.truncated[lo:hi],
                         self.keep[a:b] - lo, [s.slice(a, b) for s in self.seqs], [m.slice(a, b) for m in self.masks],
                         {it: t[a:b] for it, t in self.decoded.items()})  # fmt: skip


def finish_columns(p: Predicted, iterations: int, quality: QualityConfig, decode: Callable[[Ragged], list[str]]) -> dict:
    """Decoded texts (iterations 0..K, rows = keep) and the filter's status, reason and san per row."""
    n = len(p)
    texts = [p.decoded[it] if it in p.decoded else decode(p.seqs[it]) for it in range(iterations + 1)]
    reason = list(p.reason)
    status = ["dropped" if r else "ok" for r in reason]
    san: list[str | None] = [None] * n
    ref, final = texts[0], texts[iterations]
    for j, i in enumerate(p.keep.tolist()):
        r = output_reason(ref[j], final[j], quality)
        if r:
            status[i], reason[i] = "dropped", f"quality:{r}"
        else:
            san[i] = final[j]
    return {"texts": texts, "status": status, "reason": reason, "san": san}


def _spread(values: list, keep: np.ndarray, n: int) -> list:
    """A value per kept row -> a value per row (None elsewhere)."""
    if len(keep) == n:
        return values
    out = np.full(n, None, dtype=object)
    if len(keep):
        vals = np.empty(len(values), dtype=object)
        vals[:] = values
        out[keep] = vals
    return out.tolist()


def _list_column(name: str, masks: Ragged, keep: np.ndarray, n: int) -> pl.Series:
    """List(Int64) column: a kept row's masked positions, null for the other rows."""
    lengths = np.zeros(n, dtype=np.int64)
    lengths[keep] = masks.lengths
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.zeros(n, dtype=bool)
    valid[keep] = True
    arr = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(masks.values.astype(np.int64), type=pa.int64()),
                                        mask=pa.array(~valid))  # fmt: skip
    s = pl.from_arrow(arr)
    assert isinstance(s, pl.Series)
    return s.alias(name)


def rows_frame(p: Predicted, cols: dict, iterations: int) -> pl.DataFrame:
    """The shard rows of one chunk (or slice), in input order."""
    n, keep = len(p), p.keep
    out: dict = {
        "id": pl.Series("id", p.ids, dtype=pl.Int64),
        "text": pl.Series("text", p.texts, dtype=pl.String),
        "status": pl.Series("status", cols["status"], dtype=pl.String),
        "reason": pl.Series("reason", cols["reason"], dtype=pl.String),
        "augmenter": pl.Series("augmenter", [AUGMENTER] * n, dtype=pl.String),
        "san": pl.Series("san", cols["san"], dtype=pl.String),
        "truncated": pl.Series("truncated", p.truncated, dtype=pl.Boolean),
    }
    for it in range(iterations + 1):
        out[f"iter{it}"] = pl.Series(f"iter{it}", _spread(cols["texts"][it], keep, n), dtype=pl.String)
    for it in range(1, iterations + 1):
        out[f"masked{it}"] = _list_column(f"masked{it}", p.masks[it - 1], keep, n)
    return pl.DataFrame(out)
