"""STS metrics cross-checked against an independent computation (scipy, hand-built predictions)."""

from __future__ import annotations

import zlib

import numpy as np
import polars as pl
import pytest
from scipy import stats
from test_senteval_readers import WORDS, make_toy_senteval

from hardneg.data.senteval import STS_DATASETS, load_pairs
from hardneg.evaluate.metrics import pearson, rankdata, spearman
from hardneg.evaluate.sts import (
    dataset_metrics,
    evaluate_sts_predictions,
    stsb_dev_spearman,
    subsample,
)


def bow_encode(sentences: list[str]) -> np.ndarray:
    """A bag-of-words 'encoder': word counts plus a small per-sentence hash component (so that
    cosines have no exact ties, whose order would depend on float rounding)."""
    index = {w: i for i, w in enumerate(WORDS)}
    out = np.ones((len(sentences), len(WORDS) + 1), dtype=np.float32)
    for r, s in enumerate(sentences):
        out[r] += np.random.default_rng(zlib.crc32(s.encode())).uniform(0, 0.5, len(WORDS) + 1)
        for w in s.split():
            if w in index:
                out[r, index[w]] += 1
    return out


def test_rank_and_correlations_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 6, size=200).astype(float)  # many ties
    b = a + rng.normal(0, 2, size=200)
    np.testing.assert_allclose(rankdata(a), stats.rankdata(a))
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert pearson(a, b) == pytest.approx(stats.pearsonr(a, b).statistic, abs=1e-12)
    assert np.isnan(spearman(np.ones(5), np.arange(5.0)))


def test_all_mean_wmean_on_hand_built_predictions():
    rng = np.random.default_rng(1)
    sizes = {"A": 30, "B": 7, "C": 55}
    rows = []
    for sub, n in sizes.items():
        gold = rng.uniform(0, 5, n).round(1)
        # subset-specific offset: "all" differs from the mean of subsets
        pred = gold / 5 + rng.normal(0, 0.3, n) + {"A": 0.0, "B": 0.5, "C": -0.3}[sub]
        rows += [(sub, g, p) for g, p in zip(gold, pred)]
    frame = pl.DataFrame(rows, schema=["subset", "score", "cosine"], orient="row").with_columns(
        pl.lit("STS14").alias("dataset"))
    m = dataset_metrics(frame, ndigits=None)
    allp = np.array([r[2] for r in rows]); allg = np.array([r[1] for r in rows])
    assert m["spearman"] == pytest.approx(100 * stats.spearmanr(allp, allg).statistic, abs=1e-9)
    per = {s: stats.spearmanr(frame.filter(pl.col("subset") == s)["cosine"], frame.filter(pl.col("subset") == s)["score"]).statistic for s in sizes}
    assert m["spearman_mean"] == pytest.approx(100 * np.mean(list(per.values())), abs=1e-9)
    w = np.array(list(sizes.values()), dtype=float)
    assert m["spearman_wmean"] == pytest.approx(100 * np.dot(list(per.values()), w) / w.sum(), abs=1e-9)
    assert m["subsets"]["B"]["n"] == 7 and abs(m["spearman"] - m["spearman_mean"]) > 0.1
    rounded = dataset_metrics(frame)
    assert rounded["spearman"] == round(m["spearman"], 2)


def test_evaluate_sts_end_to_end_against_independent_computation(tmp_path):
    root = make_toy_senteval(tmp_path, n=12)
    metrics, preds = evaluate_sts_predictions(bow_encode, root)
    assert set(STS_DATASETS) <= set(metrics) and metrics["avg"]["datasets"] == list(STS_DATASETS)
    assert preds.columns[:6] == ["dataset", "subset", "pair_index", "sentence1", "sentence2", "score"]
    assert {"cosine", "mer", "split"} <= set(preds.columns)
    heads = []
    for name in STS_DATASETS:
        pairs = load_pairs(root, name)
        u = bow_encode(pairs["sentence1"].to_list()).astype(np.float64)
        v = bow_encode(pairs["sentence2"].to_list()).astype(np.float64)
        cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        rho = 100 * stats.spearmanr(cos, pairs["score"].to_numpy()).statistic
        assert metrics[name]["spearman"] == round(rho, 2), name
        heads.append(rho)
    assert metrics["avg"]["spearman"] == round(float(np.mean(heads)), 2)
    # one dataset alone gives the same figure; the dev split defaults to STS-B/SICK-R dev
    assert evaluate_sts_predictions(bow_encode, root, datasets=["STS13"])[0]["STS13"] == metrics["STS13"]
    dev, _ = evaluate_sts_predictions(bow_encode, root, split="dev")
    assert set(dev) == {"STSBenchmark", "SICKRelatedness", "avg"}
    assert round(stsb_dev_spearman(bow_encode, root), 2) == dev["STSBenchmark"]["spearman"]


def test_subsample_is_deterministic_and_spread():
    frame = pl.DataFrame({"subset": ["a"] * 50 + ["b"] * 50, "x": list(range(100))})
    small = subsample(frame, 10)
    assert small.height == 10 and small["subset"].n_unique() == 2
    assert subsample(frame, 10).equals(small) and subsample(frame, None) is frame
