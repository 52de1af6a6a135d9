"""``hardneg inspect`` views of negation and back-translation shards (OssCSE augmenters).

Registered into :mod:`hardneg.augment.inspect` on import (negation.py and backtranslate.py import
this module, and inspect.py imports those lazily).
"""

from __future__ import annotations

import polars as pl

from hardneg.augment.inspect import mark_changes, register_renderer, sample_rows


def _counts(frame: pl.DataFrame, col: str) -> str:
    if col not in frame.columns:
        return f"  (no '{col}' column)"
    sub = (
        frame.filter(pl.col(col).is_not_null())
        .group_by(col)
        .len()
        .sort(["len", col], descending=[True, False])
    )
    return (
        "\n".join(f"  {r[col]:<28} {r['len']:>8}" for r in sub.iter_rows(named=True)) or "  (none)"
    )


def render_negation(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """Rules fired, then sample rows with the inserted/removed words in brackets."""
    lines = [
        "negation rules:",
        _counts(frame, "rule"),
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


def render_backtranslation(frame: pl.DataFrame, sample: int, seed: int) -> str:
    """Selected pivots, MER of the selections, then every candidate of the sample rows."""
    lines = ["selected pivot:", _counts(frame, "paraphrase_pivot")]
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


register_renderer("negation", render_negation)
register_renderer("backtranslation", render_backtranslation)
