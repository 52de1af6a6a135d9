"""``hardneg inspect`` view of mined-negative shards: each sentence beside its mined neighbour."""

from __future__ import annotations

import polars as pl

from hardneg.augment.inspect import sample_rows


def render_mine(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """Score and rank distribution, then sample rows with their neighbours (score, rank, id)."""
    ok = frame.filter(pl.col("status") == "ok")
    lines = ["mined negatives:"]
    if ok.height:
        s = ok["mined_score"]
        lines.append(f"  score of the first: min {s.min():.3f}  median {s.median():.3f}  max {s.max():.3f}")
        lines.append(f"  rank of the first:  min {ok['mined_rank'].min()}  median {ok['mined_rank'].median():.0f}  "
                     f"max {ok['mined_rank'].max()}")
        lines.append(f"  negatives per row:  {ok['mined_ids'].list.len().mean():.2f}")
    else:
        lines.append("  (none)")
    lines += ["", f"sample ({min(sample, frame.height)} rows):"]
    for r in sample_rows(frame, sample, seed).iter_rows(named=True):
        lines.append(f"  [{r['id']}] {r['text']}")
        if r["mined"] is None:
            lines.append(f"      -> none: {r['reason']}")
            continue
        lines.append(f"      -> {r['mined']}   (cos {r['mined_score']:.3f}, rank {r['mined_rank']}, id {r['mined_id']})")
        for nid, sc, rk in list(zip(r["mined_ids"], r["mined_scores"], r["mined_ranks"]))[1:]:
            lines.append(f"         + id {nid} (cos {sc:.3f}, rank {rk})")
    return "\n".join(lines)
