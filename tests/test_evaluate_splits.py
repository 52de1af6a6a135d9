"""Cont./Oppn. splits (OssCSE §3.3), per-model split figures, plots and the CLI commands."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats
from test_evaluate_sts import bow_encode
from test_senteval_readers import make_toy_senteval

from hardneg.cli import main
from hardneg.evaluate.plots import hard_pairs, plot_cont_oppn, plot_hard_pairs
from hardneg.evaluate.splits import assign_split, build_splits, split_cosines, split_metrics
from hardneg.text.mer import mer_batch


def test_assign_split_rule_and_ties():
    score = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 1.0])
    mer = np.array([0.9, 0.8, 0.5, 0.1, 0.2, 0.3, 0.1])
    labels, ms, me = assign_split(score, mer)
    assert ms == 3.0 and me == 0.3
    # >m & <m or <m & >m -> cont; ties with a median (score 3.0 or MER 0.3) -> oppn
    assert labels.tolist() == ["cont", "cont", "oppn", "cont", "cont", "oppn", "oppn"]


def test_real_split_statistics_match_paper_rows(senteval_dir):
    table, summary = build_splits(senteval_dir)
    g = summary["groups"]
    # Rows of the paper's Table 2 that our SentEval text reproduces exactly.
    for name, cont, oppn, med in [("STS2012-MSRvid", 406, 344, 2.4), ("STS2013-headlines", 495, 255, 2.6),
                                  ("STS2016-plagiarism", 153, 77, 3.0), ("STS2016-postediting", 180, 64, 3.0),
                                  ("STS2016-question-question", 75, 134, 2.0)]:
        assert (g[name]["cont"], g[name]["oppn"], g[name]["median_score"]) == (cont, oppn, med)
    assert not g["STS2012-SMTeuroparl"]["included"] and g["STS2012-MSRvid"]["included"]
    assert set(table.columns) >= {"dataset", "subset", "score", "mer", "split"}
    assert table.height == sum(v["n"] for v in g.values() if v["included"]) == summary["totals"]["pairs"]
    sub = table.filter(pl.col("group") == "STS2014-deft-forum")
    np.testing.assert_allclose(sub["mer"].to_numpy(), mer_batch(sub["sentence1"], sub["sentence2"]))
    _narrow, s2 = build_splits(senteval_dir, ["STS12"], (2.0, 3.2))
    assert s2["included"] == ["STS2012-MSRvid"]  # MSRpar's median 3.25 is outside [2, 3.2]


def test_split_metrics_against_scipy_and_prediction_reuse(tmp_path):
    root = make_toy_senteval(tmp_path, n=40)
    table, _ = build_splits(root, ["STS14", "STSBenchmark:test"], (0.0, 5.0))
    scored = split_cosines(bow_encode, table)
    m = split_metrics(scored, ndigits=None)
    vals = []
    for name, part in m["groups"].items():
        for kind in ("cont", "oppn"):
            sub = scored.filter((pl.col("group") == name) & (pl.col("split") == kind))
            rho = stats.spearmanr(sub["cosine"], sub["score"]).statistic
            assert part[kind]["spearman"] == pytest.approx(100 * rho, abs=1e-9)
            if kind == "cont":
                vals.append((rho, sub.height))
    r, w = np.array(vals).T
    assert m["weighted_average"]["cont"] == pytest.approx(100 * np.average(r, weights=w), abs=1e-9)
    # cosines taken from earlier predictions are reused, not recomputed
    preds = scored.select("dataset", pl.col("data_split").alias("split"), "pair_index",
                          (pl.col("cosine") * 0 + 0.5).alias("cosine")).head(10)
    calls = []
    reused = split_cosines(lambda s: calls.append(len(s)) or bow_encode(s), table, preds)
    assert reused["cosine"].head(10).to_list() == [0.5] * 10
    assert calls == [2 * (table.height - 10)]


def test_plots_write_pngs(tmp_path):
    cont = {"groups": {"A": {"cont": {"spearman": 80.0, "n": 3}, "oppn": {"spearman": None, "n": 1}}},
            "weighted_average": {"cont": 80.0, "oppn": None}}
    assert plot_cont_oppn(cont, tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    preds = pl.DataFrame({"score": [4.5, 4.0, 1.0, 5.0], "mer": [0.9, 0.3, 0.9, 0.41], "cosine": [0.8, 0.9, 0.1, 0.7]})
    assert hard_pairs(preds)["cosine"].to_list() == [0.8, 0.7]  # overlap = 1 - MER < 0.6
    assert plot_hard_pairs({"m": preds}, tmp_path / "h.png").stat().st_size > 1000


def test_cli_splits_and_eval_sts(tmp_path, capsys, bert_tokenizer):
    import torch
    from transformers import BertConfig, BertModel

    root = make_toy_senteval(tmp_path / "se", n=10)
    out = tmp_path / "splits.parquet"
    assert main(["splits", "--senteval-dir", str(root), "--out", str(out), "--median-range", "0", "5"]) == 0
    table = pl.read_parquet(out)
    assert table["split"].unique().sort().to_list() == ["cont", "oppn"]
    assert json.loads((tmp_path / "splits.stats.json").read_text())["totals"]["pairs"] == table.height
    torch.manual_seed(0)
    model_dir = tmp_path / "tiny"
    BertModel(BertConfig(vocab_size=bert_tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)).save_pretrained(model_dir)
    bert_tokenizer.save_pretrained(model_dir)
    js, pq = tmp_path / "sts.json", tmp_path / "pred.parquet"
    rc = main(["eval-sts", str(model_dir), "--senteval-dir", str(root), "--out", str(js), "--pooler",
               "avg_first_last", "--predictions", str(pq), "--splits", str(out), "--cont-oppn",
               str(tmp_path / "co.json"), "--max-length", "32", "--quiet"])
    assert rc == 0
    res = json.loads(js.read_text())
    for name in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"):
        assert isinstance(res[name]["spearman"], float)
    pred = pl.read_parquet(pq)
    assert pred.columns == ["dataset", "split", "subset", "pair_index", "sentence1", "sentence2", "score", "cosine", "mer"]
    assert set(json.loads((tmp_path / "co.json").read_text())["weighted_average"]) == {"cont", "oppn"}
    # bad input: clear one-line errors, exit code 2
    capsys.readouterr()
    assert main(["eval-sts", str(tmp_path / "missing"), "--senteval-dir", str(root), "--out", str(js)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["eval-sts", str(model_dir), "--senteval-dir", str(root), "--out", str(js), "--pooler", "cls2"]) == 2
    assert "--pooler: unknown pooler 'cls2'" in capsys.readouterr().err
    assert main(["splits", "--senteval-dir", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "SentEval folder not found" in capsys.readouterr().err


def test_the_splits_and_plots_runners_import_no_torch():
    """The cont_oppn_splits and evaluate_plots jobs import hardneg.evaluate.run for a table and a
    plot: torch (~3 CPU-s a job) comes only with the encoder that evaluate_model loads."""
    import subprocess
    import sys

    code = "import sys, hardneg.evaluate.run; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"
