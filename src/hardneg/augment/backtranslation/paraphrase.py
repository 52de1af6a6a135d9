"""Paraphrase selection by MER (OssCSE §4 Step 2 and Appendix A).

OssCSE keeps back-translations whose MER to the original lies in [0.15, 0.6]: below, the surface
barely changed; above, "these sentences may have been corrupted by the translation errors"
(Appendix A). Among candidates in the window, the default policy ``max_mer`` takes the most
surface-dissimilar one, since the paraphrase is meant to be "similar in semantics but distinctive
in surface structure" (§4 Step 2). ``min_mer`` and ``pivot_order`` (first pivot in config order
whose candidate is in range) are there for ablations. Ties go to the earlier pivot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from hardneg.text import mer_batch

POLICIES = ("max_mer", "min_mer", "pivot_order")
CANDIDATE_DTYPE = pl.List(pl.Struct({"pivot": pl.String, "text": pl.String, "mer": pl.Float64}))


@dataclass(frozen=True)
class ParaphraseConfig:
    """Settings of the ``paraphrase`` config section."""

    mer_min: float = 0.15
    mer_max: float = 0.6
    policy: str = "max_mer"
    lowercase: bool = True

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> ParaphraseConfig:
        d = dict(d or {})
        unknown = sorted(set(d) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"paraphrase: unknown setting(s) {', '.join(unknown)}")
        cfg = cls(**d)
        if not 0.0 <= cfg.mer_min <= cfg.mer_max <= 1.0:
            raise ValueError(
                f"paraphrase: need 0 <= mer_min ({cfg.mer_min}) <= mer_max ({cfg.mer_max}) <= 1"
            )
        if cfg.policy not in POLICIES:
            raise ValueError(f"paraphrase.policy: '{cfg.policy}' is not one of {POLICIES}")
        return cfg


def _pick(scored: list[tuple[int, str, str, float]], policy: str) -> tuple[int, str, str, float]:
    # scored: (pivot position, pivot, text, mer), all in range; ties -> earlier pivot.
    if policy == "max_mer":
        return min(scored, key=lambda c: (-c[3], c[0]))
    if policy == "min_mer":
        return min(scored, key=lambda c: (c[3], c[0]))
    return min(scored, key=lambda c: c[0])


def select_frame(cands: pl.DataFrame, cfg: ParaphraseConfig) -> pl.DataFrame:
    """A candidates shard (:func:`hardneg.augment.backtranslation.translate.backtranslate_frame`) -> the
    back-translation shard of the contract: ``candidates`` (pivot, text, mer), ``paraphrase``,
    ``paraphrase_mer``, ``paraphrase_pivot``; rows without a candidate in range keep a reason."""
    for col in ("id", "text", "status", "reason", "candidates"):
        if col not in cands.columns:
            raise ValueError(
                f"paraphrase: candidates shard has no '{col}' column (have: {', '.join(cands.columns)})"
            )
    texts = cands.get_column("text").to_list()
    status = cands.get_column("status").to_list()
    reasons = cands.get_column("reason").to_list()
    rows = cands.get_column("candidates").to_list()
    # One batched MER call over every (original, candidate) pair of the shard.
    flat = [
        (k, j)
        for k, row in enumerate(rows)
        for j, c in enumerate(row or [])
        if c["text"] is not None
    ]
    mers = mer_batch(
        [texts[k] for k, _ in flat], [rows[k][j]["text"] for k, j in flat], lowercase=cfg.lowercase
    )
    mer_of = {kj: float(m) for kj, m in zip(flat, mers)}
    out_cands, para, para_mer, para_pivot = [], [], [], []
    for k, row in enumerate(rows):
        row = row or []
        out_cands.append(
            [
                {"pivot": c["pivot"], "text": c["text"], "mer": mer_of.get((k, j))}
                for j, c in enumerate(row)
            ]
        )
        pick = None
        if status[k] != "dropped":
            scored = [
                (j, c["pivot"], c["text"], mer_of[(k, j)])
                for j, c in enumerate(row)
                if c["text"] is not None and cfg.mer_min <= mer_of[(k, j)] <= cfg.mer_max
            ]
            if scored:
                pick = _pick(scored, cfg.policy)
            else:
                status[k] = "dropped"
                # Few distinct reasons (groupable); each candidate's MER stays in `candidates`.
                kinds = {
                    "failed"
                    if c["text"] is None
                    else ("below" if mer_of[(k, j)] < cfg.mer_min else "above")
                    for j, c in enumerate(row)
                }
                got = (
                    ", ".join(x for x in ("below", "above", "failed") if x in kinds)
                    or "no candidates"
                )
                reasons[k] = f"no candidate with MER in [{cfg.mer_min:g}, {cfg.mer_max:g}] ({got})"
        para.append(pick[2] if pick else None)
        para_mer.append(pick[3] if pick else None)
        para_pivot.append(pick[1] if pick else None)
    return pl.DataFrame(
        {
            "id": cands.get_column("id").cast(pl.Int64),
            "text": pl.Series("text", texts, dtype=pl.String),
            "status": pl.Series(status, dtype=pl.String),
            "reason": pl.Series(reasons, dtype=pl.String),
            "augmenter": pl.Series(["backtranslation"] * len(texts), dtype=pl.String),
            "candidates": pl.Series("candidates", out_cands, dtype=CANDIDATE_DTYPE),
            "paraphrase": pl.Series(para, dtype=pl.String),
            "paraphrase_mer": pl.Series(para_mer, dtype=pl.Float64),
            "paraphrase_pivot": pl.Series(para_pivot, dtype=pl.String),
        }
    )


def summarize(frame: pl.DataFrame) -> dict[str, Any]:
    """Counts per status and selected pivot; ``rows == ok + dropped``."""

    def counts(col: str) -> dict[str, int]:
        sub = frame.filter(pl.col(col).is_not_null()).group_by(col).len().sort(col)
        return {r[col]: int(r["len"]) for r in sub.iter_rows(named=True)}

    m = frame.get_column("paraphrase_mer").drop_nulls()
    return {
        "rows": frame.height,
        "status": counts("status"),
        "pivot": counts("paraphrase_pivot"),
        "mean_mer": float(m.mean()) if m.len() else None,
    }
