"""The ``hardneg inspect`` view of SAN shards: originals beside each iteration (replaced words
in [brackets]) and MER to the original per iteration."""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from hardneg.augment.inspect import mark_changes, sample_rows
from hardneg.text.mer import mer_batch


def _iterations(frame: pl.DataFrame) -> list[int]:
    return sorted(int(m.group(1)) for c in frame.columns if (m := re.fullmatch(r"iter(\d+)", c)) and c != "iter0")


def mer_per_iteration(frame: pl.DataFrame) -> pl.DataFrame:
    """MER of each iteration's text to the input as the MLM saw it (``iter0``), over rows that
    ran mask-predict: mean, median, share unchanged, mean masked positions."""
    ran = frame.filter(pl.col("iter0").is_not_null())
    rows = []
    ref = ran.get_column("iter0").to_list()
    for k in _iterations(frame):
        hyp = ran.get_column(f"iter{k}").to_list()
        m = mer_batch(ref, hyp) if ref else np.zeros(0)
        masked = ran.get_column(f"masked{k}").list.len().to_numpy() if f"masked{k}" in ran.columns else np.zeros(0)
        rows.append(
            {
                "iteration": k,
                "mer_mean": round(float(m.mean()), 4) if len(m) else None,
                "mer_median": round(float(np.median(m)), 4) if len(m) else None,
                "unchanged_pct": round(100.0 * float((m == 0).mean()), 1) if len(m) else None,
                "masked_per_sentence": round(float(masked.mean()), 2) if len(masked) else None,
            }
        )
    return pl.DataFrame(rows, schema={"iteration": pl.Int64, "mer_mean": pl.Float64, "mer_median": pl.Float64, "unchanged_pct": pl.Float64, "masked_per_sentence": pl.Float64})


def render_san(frame: pl.DataFrame, sample: int, seed: int) -> str:
    ks = _iterations(frame)
    lines = ["-- SAN sample (changed words in [brackets]; iteration i vs iteration i-1)"]
    for row in sample_rows(frame, sample, seed).iter_rows(named=True):
        lines.append(f"[id {row['id']}] {row['status']}" + (f" ({row['reason']})" if row["reason"] else "") + (" (truncated)" if row.get("truncated") else ""))
        lines.append(f"  text : {row['text']}")
        prev = row.get("iter0")
        if prev is None:
            continue
        lines.append(f"  iter0: {prev}")
        for k in ks:
            cur = row[f"iter{k}"]
            masked = row.get(f"masked{k}") or []
            lines.append(f"  iter{k}: {mark_changes(prev, cur)}   masked at {masked}")
            prev = cur
        if row["status"] == "substituted":
            lines.append(f"  san  : {row['san']}  (substituted)")
    lines.append("")
    lines.append("-- MER to the input per iteration (rows that ran mask-predict)")
    with pl.Config(tbl_hide_dataframe_shape=True, tbl_formatting="MARKDOWN", tbl_hide_column_data_types=True):
        lines.append(str(mer_per_iteration(frame)))
    return "\n".join(lines)

