"""Method minus base method with a confidence interval: Welch's t over seeds and the paired
bootstrap over test pairs, on synthetic data with known answers, and both in the report."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from hardneg.report import collect
from hardneg.report.build import build_report
from hardneg.report.differences import Interval, differences_table, paired_bootstrap, welch_interval
from hardneg.shards import write_shard

EPS = np.finfo(np.float64).eps


def _predictions(cosine: np.ndarray, gold: np.ndarray, datasets=("STS12", "SICKRelatedness")) -> pl.DataFrame:
    n = len(gold) // len(datasets)
    return pl.DataFrame({
        "dataset": [d for d in datasets for _ in range(n)], "split": ["test"] * len(gold),
        "subset": ["s"] * len(gold), "pair_index": list(range(n)) * len(datasets),
        "score": gold.astype(np.float64), "cosine": cosine.astype(np.float64)})


def test_welch_interval_equals_the_textbook_formula():
    a, b = [71.0, 72.0, 73.0], [70.0, 70.5, 71.0]
    iv = welch_interval(a, b, 0.95)
    va, vb = 1.0 / 3, 0.25 / 3  # sample variances 1 and 0.25 over three seeds
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    # a few dozen float operations on values ~70: tolerance from float64 eps at that scale
    tol = 64 * EPS * 100
    assert iv.diff == pytest.approx(1.5, abs=tol)
    assert (iv.low, iv.high) == pytest.approx((1.5 - half, 1.5 + half), abs=tol)
    assert not iv.excludes_zero and "inside seed noise" in iv.words()
    # a shift of 10 over a spread of 1 is outside seed noise
    far = welch_interval([80.0, 81.0, 82.0], [70.0, 71.0, 72.0])
    assert far.excludes_zero and far.words().startswith("+10.00 [") and "outside seed noise" in far.words()
    same = welch_interval([70.0, 70.0], [70.0, 70.0])
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=">= 2 seeds"):
        welch_interval([70.0], [70.0, 71.0])


def test_bootstrap_identical_predictions_give_zero_and_a_degenerate_interval():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 6, 200).astype(np.float64)  # ties, as STS gold scores have
    p = _predictions(gold + rng.normal(0, 2, 200), gold)
    iv = paired_bootstrap(p, p.clone(), resamples=200, seed=3)
    assert (iv.diff, iv.low, iv.high) == (0.0, 0.0, 0.0)
    assert iv.words() == "+0.00 [+0.00, +0.00], inside test-pair noise (one seed: seed noise not measured)"


def test_bootstrap_a_large_known_shift_excludes_zero_and_is_reproducible():
    rng = np.random.default_rng(2)
    gold = rng.uniform(0, 5, 400)
    good = _predictions(gold + rng.normal(0, 0.3, 400), gold)  # Spearman ~0.98
    bad = _predictions(rng.uniform(0, 5, 400), gold)  # Spearman ~0
    iv = paired_bootstrap(good, bad, resamples=300, seed=0)
    # the point estimate is the avg difference the report computes (mean over datasets, x100)
    want = np.mean([100 * (stats.spearmanr(g["cosine"], g["score"])[0] - stats.spearmanr(b["cosine"], b["score"])[0])
                    for (_, g), (_, b) in zip(good.group_by("dataset", maintain_order=True),
                                              bad.group_by("dataset", maintain_order=True), strict=True)])
    assert iv.diff == pytest.approx(want, abs=1e-9)
    assert iv.low > 50 and iv.low <= iv.diff <= iv.high and iv.excludes_zero
    assert "outside test-pair noise" in iv.words()
    assert paired_bootstrap(good, bad, resamples=300, seed=0) == iv  # seeded: same bytes every run
    reverse = paired_bootstrap(bad, good, resamples=300, seed=0)
    assert (reverse.diff, reverse.low, reverse.high) == pytest.approx((-iv.diff, -iv.high, -iv.low), abs=1e-9)


def test_bootstrap_refuses_predictions_of_different_pairs():
    gold = np.arange(20, dtype=np.float64)
    a = _predictions(gold, gold)
    with pytest.raises(ValueError, match="cover different pairs"):
        paired_bootstrap(a, a.head(10), resamples=100, names=("simcse_san/seed0", "simcse/seed0"))
    with pytest.raises(ValueError, match="gold scores differ"):
        paired_bootstrap(a, a.with_columns(pl.col("score") + 1), resamples=100)


def test_differences_table_picks_t_for_seeds_and_bootstrap_for_one_seed():
    long = pl.DataFrame({"method": ["simcse"] * 3 + ["simcse_san"] * 3 + ["sncse", "sncse_san", "osscse"],
                         "seed": [0, 1, 2, 0, 1, 2, 0, 0, 0], "dataset": ["avg"] * 9,
                         "spearman": [70.0, 71.0, 72.0, 72.0, 73.0, 74.0, 75.0, 75.5, 71.0]})
    rng = np.random.default_rng(5)
    gold = rng.uniform(0, 5, 100)
    preds = {("sncse", 0): _predictions(gold + rng.normal(0, 1, 100), gold),
             ("sncse_san", 0): _predictions(gold + rng.normal(0, 1, 100), gold),
             ("simcse", 0): _predictions(gold + rng.normal(0, 1, 100), gold),
             ("osscse", 0): _predictions(gold + rng.normal(0, 1, 100), gold)}
    table = differences_table(long, preds, resamples=100)
    rows = {r["method"]: r for r in table.iter_rows(named=True)}
    assert set(rows) == {"simcse_san", "sncse_san", "sncse", "osscse"}
    assert rows["simcse_san"]["interval"] == "95% Welch t over seeds (3 vs 3)"
    assert rows["simcse_san"]["difference"] == pytest.approx(2.0)
    assert rows["sncse_san"]["interval"] == "95% paired bootstrap over test pairs, seed 0, 100 resamples"
    # sncse has one seed, simcse three: the bootstrap on the seed both ran
    assert rows["sncse"]["seeds"] == "1 / 3" and "bootstrap" in rows["sncse"]["interval"]
    without = differences_table(long, {k: v for k, v in preds.items() if k[0] != "osscse"}, resamples=100)
    row = without.filter(pl.col("method") == "osscse").row(0, named=True)
    assert row["reading"] == "no interval: predictions.parquet of osscse/seed0 not given"
    assert row["difference"] == pytest.approx(1.0) and row["low"] is None


def _run(root, method, seed, avg, cosine, gold):
    run = root / "results/eval/exp" / method / f"seed{seed}"
    run.mkdir(parents=True)
    (run / "sts.json").write_text(json.dumps({"STS12": {"spearman": avg}, "avg": {"spearman": avg}}))
    write_shard(_predictions(cosine, gold, ("STS12",)), run / "predictions.parquet")
    s = root / "results/train/exp" / method / f"seed{seed}" / "summary.json"
    s.parent.mkdir(parents=True)
    s.write_text(json.dumps({"method": method, "seed": seed,
                             "settings": {"method": method, "seed": seed, "init_model": "bert-base-uncased"}}))
    return run / "sts.json", run / "predictions.parquet", s


@pytest.mark.parametrize("seeds", [[0], [0, 1, 2]])
def test_report_renders_paper_figures_and_differences(tmp_path, seeds):
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 60)
    files = [_run(tmp_path, m, s, 70.0 + s + (3 if m == "simcse_san" else 0),
                  gold + rng.normal(0, 0.5 if m == "simcse_san" else 3, 60), gold)
             for m in ("simcse", "simcse_san") for s in seeds]
    sts, preds, summaries = (list(x) for x in zip(*files, strict=True))
    out = build_report(tmp_path / "report", sts=sts, summaries=summaries, predictions=preds,
                       bootstrap={"resamples": 200}, experiment="exp")
    html = out["sts.html"].read_text()
    assert 'id="paper-figures"' in html and 'id="differences"' in html
    assert "SAN Table 3 (§4.3 Main Results), row SimCSE-BERTbase" in html and "76.64" in html
    summary = json.loads(out["summary.json"].read_text())
    (diff,) = summary["differences"]
    assert (diff["method"], diff["base"]) == ("simcse_san", "simcse")
    if len(seeds) == 1:
        assert diff["interval"] == "95% paired bootstrap over test pairs, seed 0, 200 resamples"
        assert "test-pair noise" in diff["reading"]
    else:
        # per-seed avgs 73, 74, 75 vs 70, 71, 72: +3.00, every seed's spread 1
        assert diff["interval"] == "95% Welch t over seeds (3 vs 3)" and diff["difference"] == pytest.approx(3.0)
        assert diff["reading"].startswith("+3.00 [") and diff["reading"].endswith("outside seed noise")
    assert html.count(diff["reading"]) == 1
    before = out["summary.json"].read_bytes()
    build_report(tmp_path / "report", sts=sts, summaries=summaries, predictions=preds,
                 bootstrap={"resamples": 200}, experiment="exp")
    assert out["summary.json"].read_bytes() == before
    # the paper figures rows: SAN Table 3 and HiCL Table 1 for both methods' backbone
    assert {(r["method"], r["paper avg"]) for r in summary["paper_figures"]} >= {("simcse", 76.64), ("simcse_san", 77.05)}
    assert collect.sts_long(sts).height == 2 * len(seeds) * 2


def test_interval_words_name_their_noise():
    assert Interval(0.4, -0.2, 1.0, 0.95, "welch-t").words() == "+0.40 [-0.20, +1.00], inside seed noise"
    assert Interval(-1.5, -2.0, -1.0, 0.95, "welch-t").words() == "-1.50 [-2.00, -1.00], outside seed noise"
