"""``hardneg inspect`` view of negation shards: rules fired, inserted/removed words marked."""

from __future__ import annotations

import polars as pl

from hardneg.augment.inspect import count_values, mark_changes, sample_rows


def render_negation(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """Rules fired, then sample rows with the inserted/removed words in brackets."""
    lines = [
        "negation rules:",
        count_values(frame, "rule"),
        "",
        f"sample ({min(sample, frame.height)} rows):",
    ]
    for r in sample_rows(frame, sample, seed).iter_rows(named=True):
        lines.append(f"  [{r['id']}] {r['text']}")
        if r["negation"] is None:
            lines.append(f"      -> dropped: {r['reason']}")
        else:
            tag = r["rule"] + (f"; {r['reason']}" if r["reason"] else "")
            lines.append(f"      -> {mark_changes(r['text'], r['negation'])}   ({tag})")
    return "\n".join(lines)
