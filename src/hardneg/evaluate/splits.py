"""Cont./Oppn. splits of the STS data (OssCSE, Shi et al. 2023, §3.3, Tables 2, 3 and 6).

Per source "dataset" in the paper's sense (an STS12-16 subset such as STS2012-MSRvid, or a whole
STS-B split), with median human score m_s and median MER m_e over its pairs:
    Cont. if (score > m_s and MER < m_e) or (score < m_s and MER > m_e), otherwise Oppn.
(ties with a median fall into Oppn., as the paper's "otherwise" says). A source is used only when
m_s lies in a configurable range (paper footnote 3: 2 to 3.5). The split is model-independent:
computed once and cached; models are then scored per split with Spearman, and the splits' figures
are averaged weighted by their pair counts (Tables 3 and 6).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from hardneg.data.senteval import STS_YEARS, load_pairs
from hardneg.evaluate.metrics import cosine_rows, spearman, x100
from hardneg.text.mer import mer_batch

log = logging.getLogger(__name__)

# Table 2's candidate sources: every STS12-16 subset, plus STS-B train and test.
DEFAULT_SOURCES = (*STS_YEARS, "STSBenchmark:train", "STSBenchmark:test")
DEFAULT_MEDIAN_RANGE = (2.0, 3.5)  # paper footnote 3
# The paper's naming of its sources (Table 2): STS2012-MSRvid, STSB-train.
_YEAR_NAMES = {y: f"STS20{y[3:]}" for y in STS_YEARS}

SPLIT_COLUMNS = ["group", "dataset", "data_split", "subset", "pair_index", "sentence1", "sentence2",
                 "score", "mer", "split"]


def parse_source(source: str) -> tuple[str, str]:
    """'STS12' -> ('STS12', 'test'); 'STSBenchmark:train' -> ('STSBenchmark', 'train')."""
    dataset, _, split = source.partition(":")
    return dataset, (split or "test")


def _groups(senteval_dir: str | Path, sources: Sequence[str]) -> list[pl.DataFrame]:
    out = []
    for source in sources:
        dataset, split = parse_source(source)
        pairs = load_pairs(senteval_dir, dataset, split).with_columns(pl.lit(split).alias("data_split"))
        if dataset in STS_YEARS:  # each subset of a year is its own source
            for sub in pairs.partition_by("subset", maintain_order=True):
                out.append(sub.with_columns(pl.lit(f"{_YEAR_NAMES[dataset]}-{sub['subset'][0]}").alias("group")))
        else:
            short = {"STSBenchmark": "STSB", "SICKRelatedness": "SICKR"}[dataset]
            out.append(pairs.with_columns(pl.lit(split).alias("subset"),
                                          pl.lit(f"{short}-{split}").alias("group")))
    return out


def assign_split(score: np.ndarray, mer: np.ndarray) -> tuple[np.ndarray, float, float]:
    """('cont'|'oppn' per pair, median score, median MER) for one source."""
    ms, me = float(np.median(score)), float(np.median(mer))
    cont = ((score > ms) & (mer < me)) | ((score < ms) & (mer > me))
    return np.where(cont, "cont", "oppn"), ms, me


def build_splits(
    senteval_dir: str | Path,
    sources: Sequence[str] = DEFAULT_SOURCES,
    median_range: tuple[float, float] = DEFAULT_MEDIAN_RANGE,
) -> tuple[pl.DataFrame, dict]:
    """(one row per pair of the included sources, statistics of every candidate source)."""
    lo, hi = median_range
    if lo > hi:
        raise ValueError(f"splits median_range: lower bound {lo} > upper bound {hi}")
    frames, stats = [], {}
    for g in _groups(senteval_dir, sources):
        name = g["group"][0]
        mer = mer_batch(g["sentence1"].to_list(), g["sentence2"].to_list())
        labels, ms, me = assign_split(g["score"].to_numpy(), mer)
        included = lo <= ms <= hi
        n_cont = int((labels == "cont").sum())
        stats[name] = {"dataset": g["dataset"][0], "n": g.height, "cont": n_cont, "oppn": g.height - n_cont,
                       "median_score": ms, "median_mer": round(me, 6), "included": included}
        if included:
            frames.append(g.with_columns(pl.Series("mer", mer, dtype=pl.Float64),
                                         pl.Series("split", labels, dtype=pl.String)))
    if not frames:
        raise ValueError(f"splits: no source has a median human score within {list(median_range)}")
    table = pl.concat(frames, how="vertical").select(SPLIT_COLUMNS)
    summary = {
        "median_range": [lo, hi],
        "sources": list(sources),
        "groups": stats,
        "included": [k for k, v in stats.items() if v["included"]],
        "totals": {"pairs": table.height, "cont": int((table["split"] == "cont").sum()),
                   "oppn": int((table["split"] == "oppn").sum())},
    }
    return table, summary


def split_cosines(
    encode: Callable[[list[str]], np.ndarray],
    splits: pl.DataFrame,
    predictions: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The splits table with a ``cosine`` column: reused from ``predictions`` (columns dataset,
    split or data_split, pair_index, cosine) where present, the remaining pairs encoded."""
    table = splits
    if predictions is not None and predictions.height:
        pred = predictions
        if "data_split" not in pred.columns:
            pred = pred.rename({"split": "data_split"}) if "split" in pred.columns else pred.with_columns(pl.lit("test").alias("data_split"))
        pred = pred.select("dataset", "data_split", "pair_index", "cosine")
        table = table.join(pred, on=["dataset", "data_split", "pair_index"], how="left", maintain_order="left")
    else:
        table = table.with_columns(pl.lit(None, dtype=pl.Float64).alias("cosine"))
    missing = table["cosine"].is_null().to_numpy()
    if missing.any():
        todo = table.filter(pl.col("cosine").is_null())
        s1, s2 = todo["sentence1"].to_list(), todo["sentence2"].to_list()
        emb = np.asarray(encode(s1 + s2))
        cos = np.full(table.height, np.nan)
        cos[missing] = cosine_rows(emb[: len(s1)], emb[len(s1):])
        table = table.with_columns(pl.when(pl.col("cosine").is_null()).then(pl.Series(cos)).otherwise(pl.col("cosine")).alias("cosine"))
    return table


def split_metrics(scored: pl.DataFrame, ndigits: int | None = 2) -> dict:
    """Spearman x100 on each split of each source, and the pair-weighted averages (Table 3/6)."""
    groups: dict = {}
    acc = {"cont": [], "oppn": []}
    for name in scored["group"].unique(maintain_order=True).to_list():
        g = scored.filter(pl.col("group") == name)
        groups[name] = {}
        for part in ("cont", "oppn"):
            sub = g.filter(pl.col("split") == part)
            rho = spearman(sub["cosine"].to_numpy(), sub["score"].to_numpy()) if sub.height >= 2 else float("nan")
            groups[name][part] = {"spearman": x100(rho, ndigits), "n": sub.height}
            if not np.isnan(rho):
                acc[part].append((rho, sub.height))
    weighted = {}
    for part, vals in acc.items():
        if vals:
            r, w = np.array(vals).T
            weighted[part] = x100(float(np.average(r, weights=w)), ndigits)
        else:
            weighted[part] = None
    return {"groups": groups, "weighted_average": weighted}
