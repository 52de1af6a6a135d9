"""The mine unit's section of the report's augmentation page: how close the mined negatives are
to their sentences (cosine of the first kept neighbour, its rank), so a reader sees whether the
score limits and margins left near-duplicates (docs/mine.md)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from hardneg.shards import read_shard


def mine_section(augment: Sequence[str | Path], examples: int) -> list[str]:
    """Score and rank quantiles of the first mined negative over the mined shards in ``augment``
    (none without them); ``examples`` is unused (the page's common examples table shows rows)."""
    from hardneg.report import render

    frames = []
    for path in augment:
        frame = read_shard(path)
        if frame.height and frame["augmenter"][0] == "mine":
            frames.append(frame.filter(pl.col("status") == "ok").select("mined_score", "mined_rank"))
    if not frames:
        return []
    ok = pl.concat(frames)
    quantiles = (0.0, 0.1, 0.5, 0.9, 1.0)
    table = pl.DataFrame({
        "quantile": [f"{q:.1f}" for q in quantiles],
        "cosine to the sentence": [round(float(ok["mined_score"].quantile(q, "nearest")), 4) if ok.height else None
                                   for q in quantiles],
        "rank (0 = nearest)": [int(ok["mined_rank"].quantile(q, "nearest")) if ok.height else None
                               for q in quantiles],
    })
    return ["<h3>Mined negatives</h3>",
            f"<p>{html.escape(f'{ok.height} rows with a mined negative.')}</p>",
            render.table_html(table, "Mined negatives: cosine and rank of the first kept neighbour", "mine-scores")]
