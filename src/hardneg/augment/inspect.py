"""Readable views of augmentation shards (``hardneg inspect SHARD.parquet``).

Every augmentation shard carries an ``augmenter`` column ("san", "negation",
"backtranslation"); the renderer registered for that name prints a sample of originals beside
what the augmenter made, plus augmenter-specific statistics. The generic part (row counts per
status, drop/substitution reasons) is shared here so every augmenter reports it the same way.

Renderer contract::

    def render(frame: polars.DataFrame, sample: int, seed: int) -> str: ...

One plain registry, :data:`RENDERERS`: augmenter name -> ``"module:function"`` (imported on first
use, so inspecting a negation shard never imports torch) or a callable.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from pathlib import Path

import polars as pl

from hardneg.shards import read_shard

Renderer = Callable[[pl.DataFrame, int, int], str]

REQUIRED_COLUMNS = ("id", "text", "status", "reason", "augmenter")

RENDERERS: dict[str, str | Renderer] = {
    "san": "hardneg.augment.san.inspect:render_san",
    "negation": "hardneg.augment.negation.inspect:render_negation",
    "backtranslation": "hardneg.augment.backtranslation.inspect:render_backtranslation",
    "mine": "hardneg.augment.mine.inspect:render_mine",
}


# the columns each renderer reads besides REQUIRED_COLUMNS: checked before it runs, so a shard
# without one is a line naming the shard and the column, not a KeyError from inside the view
RENDER_COLUMNS: dict[str, tuple[str, ...]] = {
    "san": ("iter0", "san"),
    "negation": ("negation", "rule"),
    "backtranslation": ("paraphrase", "paraphrase_pivot"),
    "mine": ("mined", "mined_id", "mined_score", "mined_rank", "mined_ids", "mined_scores", "mined_ranks"),
}


def register_renderer(augmenter: str, func: str | Renderer, columns: tuple[str, ...] = ()) -> None:
    """Add (or replace) the renderer of ``augmenter``: a callable or a ``"module:function"`` path,
    with the ``columns`` it reads besides ``REQUIRED_COLUMNS``."""
    if not augmenter or not (callable(func) or (isinstance(func, str) and ":" in func)):
        raise ValueError(f"register_renderer: need a name and a callable or 'module:function', got {augmenter!r}, {func!r}")
    RENDERERS[augmenter] = func
    RENDER_COLUMNS[augmenter] = tuple(columns)


def get_renderer(augmenter: str) -> Renderer:
    """The renderer for ``augmenter``, importing its module on first use."""
    entry = RENDERERS.get(augmenter)
    if entry is None:
        known = ", ".join(sorted(RENDERERS))
        raise ValueError(f"no renderer registered for augmenter '{augmenter}' (known: {known})")
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        entry = RENDERERS[augmenter] = getattr(importlib.import_module(module), name)
    return entry


# ---------------------------------------------------------------- shared helpers for renderers


def mark_changes(original: str, new: str, left: str = "[", right: str = "]") -> str:
    """``new`` with the words that differ from ``original`` wrapped in ``left``/``right``.

    Word-level alignment (difflib over whitespace words), so insertions and replacements are
    both marked; deletions show as ``[-word]``.
    """
    a, b = original.split(), new.split()
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.extend(b[j1:j2])
        elif tag == "delete":
            out.append(left + "-" + " ".join(a[i1:i2]) + right)
        else:
            out.append(left + " ".join(b[j1:j2]) + right)
    return " ".join(out)


def status_table(frame: pl.DataFrame) -> str:
    """Counts per status and per (status, reason): counts add up to the shard's rows."""
    lines = [f"rows: {frame.height}"]
    if frame.height == 0:
        return lines[0]
    by_status = frame.group_by("status").len().sort("status")
    for row in by_status.iter_rows(named=True):
        lines.append(f"  {row['status']:<12} {row['len']:>8}  ({100 * row['len'] / frame.height:.1f}%)")
    reasons = (
        frame.filter(pl.col("reason").is_not_null())
        .group_by(["status", "reason"])
        .len()
        .sort(["status", "len", "reason"], descending=[False, True, False])
    )
    if reasons.height:
        lines.append("reasons:")
        for row in reasons.iter_rows(named=True):
            lines.append(f"  {row['status']:<12} {row['reason']:<28} {row['len']:>8}")
    return "\n".join(lines)


def sample_rows(frame: pl.DataFrame, sample: int, seed: int) -> pl.DataFrame:
    """A reproducible sample, kept in corpus order (so the output reads like the shard)."""
    if frame.height <= sample:
        return frame
    return frame.sample(n=sample, seed=seed, shuffle=False).sort("id")


# ---------------------------------------------------------------- entry point


def inspect_frame(frame: pl.DataFrame, sample: int = 5, seed: int = 0, source: str = "<frame>") -> str:
    """Render an augmentation shard: generic counts, then the augmenter's own view."""
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{source}: not an augmentation shard: missing column(s) {', '.join(missing)} "
            f"(have: {', '.join(frame.columns)})"
        )
    augmenters = frame.get_column("augmenter").drop_nulls().unique().sort().to_list()
    header = [f"== {source}", f"augmenter: {', '.join(augmenters) or '(empty shard)'}", status_table(frame)]
    parts = ["\n".join(header)]
    if sample < 0:
        raise ValueError(f"sample must be >= 0, got {sample}")
    for name in augmenters:
        lacking = [c for c in RENDER_COLUMNS.get(name, ()) if c not in frame.columns]
        if lacking:
            raise ValueError(f"{source}: a '{name}' shard lacks a column its view needs: {', '.join(lacking)} "
                             f"(have: {', '.join(frame.columns)})")
        sub = frame.filter(pl.col("augmenter") == name)
        try:
            parts.append(get_renderer(name)(sub, sample, seed))
        except pl.exceptions.ColumnNotFoundError as exc:
            raise ValueError(f"{source}: a '{name}' shard lacks a column its view needs: "
                             f"{str(exc).splitlines()[0]} (have: {', '.join(frame.columns)})") from None
        except KeyError as exc:  # a row dict without the column (a renderer that declared too little)
            if not (exc.args and isinstance(exc.args[0], str) and exc.args[0] not in frame.columns):
                raise
            raise ValueError(f"{source}: a '{name}' shard lacks a column its view needs: {exc.args[0]} "
                             f"(have: {', '.join(frame.columns)})") from None
    return "\n\n".join(parts) + "\n"


def inspect_shard(path: str | Path, sample: int = 5, seed: int = 0) -> str:
    """Read ``path`` and render it (see :func:`inspect_frame`)."""
    return inspect_frame(read_shard(path), sample=sample, seed=seed, source=str(path))


def count_values(frame: pl.DataFrame, col: str) -> str:
    """One line per distinct non-null value of ``col`` with its count, most frequent first."""
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
