"""``hardneg inspect`` view of back-translation shards: pivots, MER, every candidate."""

from __future__ import annotations

import polars as pl

from hardneg.augment.inspect import count_values, sample_rows


def render_backtranslation(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """Selected pivots, MER of the selections, then every candidate of the sample rows."""
    lines = ["selected pivot:", count_values(frame, "paraphrase_pivot")]
    if "paraphrase_mer" in frame.columns:
        m = frame.get_column("paraphrase_mer").drop_nulls()
        if m.len():
            lines.append(f"selected MER: mean {m.mean():.3f}, min {m.min():.3f}, max {m.max():.3f}")
    lines += ["", f"sample ({min(sample, frame.height)} rows):"]
    for r in sample_rows(frame, sample, seed).iter_rows(named=True):
        lines.append(f"  [{r['id']}] {r['text']}")
        for c in r.get("candidates") or []:
            chosen = (
                "*"
                if r["paraphrase"] is not None
                and c["text"] == r["paraphrase"]
                and c["pivot"] == r["paraphrase_pivot"]
                else " "
            )
            mer = "  -  " if c["mer"] is None else f"{c['mer']:.3f}"
            lines.append(
                f"    {chosen} {c['pivot']:<6} MER {mer}  {c['text'] if c['text'] is not None else '(failed)'}"
            )
        if r["paraphrase"] is None:
            lines.append(f"      -> dropped: {r['reason']}")
    return "\n".join(lines)
