"""STS evaluation exactly as SentEval/SimCSE's "all" setting does it.

- cosine similarity of the two sentence embeddings is the prediction, no regressor;
- STS12-16: the headline figure is the "all" Spearman: every subset's cosines of one year
  concatenated and one Spearman computed (SimCSE's evaluation.py, task 'all'); per-subset,
  mean and weighted mean (weights = subset sizes) are reported beside it;
- STS-B and SICK-R test: plain Spearman over the test set; their dev sets serve model selection;
- figures x100, two decimals; "avg" is the mean of the evaluated datasets' figures.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from hardneg.data.senteval import STS_DATASETS, STS_YEARS, load_pairs
from hardneg.evaluate.metrics import cosine_rows, pearson, spearman, x100
from hardneg.text.mer import mer_batch

log = logging.getLogger(__name__)

EncodeFn = Callable[[list[str]], np.ndarray]
DEV_DATASETS = ("STSBenchmark", "SICKRelatedness")
# Cosines are stored rounded so the predictions file does not depend on float noise from the
# batch shape (metrics are computed before rounding).
COSINE_DECIMALS = 6


def subsample(pairs: pl.DataFrame, max_pairs: int | None) -> pl.DataFrame:
    """At most ``max_pairs`` rows, evenly spaced (deterministic; covers every subset).

    Only for quick CI runs: results on a subsample are not comparable to published figures.
    """
    if max_pairs is None or pairs.height <= max_pairs:
        return pairs
    if max_pairs < 2:
        raise ValueError(f"evaluate.max_pairs must be >= 2 (got {max_pairs})")
    idx = np.unique(np.linspace(0, pairs.height - 1, max_pairs).round().astype(np.int64))
    return pairs[idx]


def load_eval_pairs(
    senteval_dir: str | Path,
    datasets: Sequence[str] = STS_DATASETS,
    split: str = "test",
    max_pairs: int | None = None,
) -> pl.DataFrame:
    """Pairs of several datasets (optionally subsampled per dataset), with a ``split`` column."""
    frames = [subsample(load_pairs(senteval_dir, d, split), max_pairs) for d in datasets]
    return pl.concat(frames, how="vertical").with_columns(pl.lit(split).alias("split"))


def predict(encode: EncodeFn, pairs: pl.DataFrame) -> pl.DataFrame:
    """Add ``cosine`` (model) and ``mer`` (word-level, case-insensitive) to a pairs frame.

    All sentences of all datasets go through ONE ``encode`` call, so the encoder can de-duplicate
    and length-sort across the whole suite.
    """
    s1 = pairs["sentence1"].to_list()
    s2 = pairs["sentence2"].to_list()
    if not s1:
        raise ValueError("predict: no pairs to evaluate")
    emb = np.asarray(encode(s1 + s2))
    if emb.ndim != 2 or emb.shape[0] != 2 * len(s1):
        raise ValueError(f"encode returned shape {emb.shape}, expected ({2 * len(s1)}, dim)")
    cos = cosine_rows(emb[: len(s1)], emb[len(s1):])
    return pairs.with_columns(
        pl.Series("cosine", cos, dtype=pl.Float64),
        pl.Series("mer", mer_batch(s1, s2), dtype=pl.Float64),
    )


def _corr(frame: pl.DataFrame) -> tuple[float, float]:
    pred = frame["cosine"].to_numpy()
    gold = frame["score"].to_numpy()
    return spearman(pred, gold), pearson(pred, gold)


def dataset_metrics(frame: pl.DataFrame, ndigits: int | None = 2) -> dict:
    """Metrics of one dataset's predictions (columns subset, score, cosine)."""
    dataset = frame["dataset"][0]
    sp_all, pe_all = _corr(frame)
    out: dict = {"spearman": x100(sp_all, ndigits), "pearson": x100(pe_all, ndigits), "n": frame.height}
    if dataset in STS_YEARS:
        subsets: dict = {}
        sizes, sps, pes = [], [], []
        # Subsets in file order (SentEval's list), as they appear in the frame.
        for name in frame["subset"].unique(maintain_order=True).to_list():
            sub = frame.filter(pl.col("subset") == name)
            sp, pe = _corr(sub)
            subsets[name] = {"spearman": x100(sp, ndigits), "pearson": x100(pe, ndigits), "n": sub.height}
            sizes.append(sub.height)
            sps.append(sp)
            pes.append(pe)
        w = np.asarray(sizes, dtype=np.float64)
        out.update(
            spearman_all=x100(sp_all, ndigits),
            pearson_all=x100(pe_all, ndigits),
            spearman_mean=x100(float(np.mean(sps)), ndigits),
            pearson_mean=x100(float(np.mean(pes)), ndigits),
            spearman_wmean=x100(float(np.average(sps, weights=w)), ndigits),
            pearson_wmean=x100(float(np.average(pes, weights=w)), ndigits),
            subsets=subsets,
        )
    return out


def sts_metrics(predictions: pl.DataFrame, ndigits: int | None = 2) -> dict:
    """Per-dataset metrics plus ``avg`` (mean of the datasets' headline Spearman)."""
    results: dict = {}
    for name in predictions["dataset"].unique(maintain_order=True).to_list():
        results[name] = dataset_metrics(predictions.filter(pl.col("dataset") == name), ndigits)
    raw = [
        100.0 * spearman(*(predictions.filter(pl.col("dataset") == n)[c].to_numpy() for c in ("cosine", "score")))
        for n in results
    ]
    avg = float(np.mean(raw)) if raw else float("nan")
    results["avg"] = {
        "spearman": None if np.isnan(avg) else (round(avg, ndigits) if ndigits is not None else avg),
        "datasets": list(results),
    }
    return results


def evaluate_sts_predictions(
    encode: EncodeFn,
    senteval_dir: str | Path,
    datasets: Sequence[str] | None = None,
    split: str = "test",
    max_pairs: int | None = None,
    ndigits: int | None = 2,
) -> tuple[dict, pl.DataFrame]:
    """(metrics, per-pair predictions) for ``datasets`` on ``split``."""
    if datasets is None:
        datasets = STS_DATASETS if split == "test" else DEV_DATASETS
    pairs = load_eval_pairs(senteval_dir, datasets, split, max_pairs)
    preds = predict(encode, pairs)
    metrics = sts_metrics(preds, ndigits)
    preds = preds.with_columns(pl.col("cosine").round(COSINE_DECIMALS))
    return metrics, preds


@functools.lru_cache(maxsize=8)
def _stsb_dev(senteval_dir: str) -> pl.DataFrame:
    return load_pairs(senteval_dir, "STSBenchmark", "dev")


def stsb_dev_spearman(encode: EncodeFn, senteval_dir: str | Path, max_pairs: int | None = None) -> float:
    """STS-B dev Spearman x100, unrounded (model selection, as SimCSE does every 125 steps);
    ``max_pairs`` subsamples the dev pairs (``subsample``: CI only)."""
    pairs = subsample(_stsb_dev(str(Path(senteval_dir).resolve())), max_pairs)
    preds = predict(encode, pairs)
    return 100.0 * spearman(preds["cosine"].to_numpy(), preds["score"].to_numpy())
