"""bootstrap_mlm: fits a head, reports held-out accuracy beside a unigram baseline, and its output
folder is usable as a SAN MLM."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import torch

from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm
from hardneg.models.load import load_masked_lm
from hardneg.shards import write_shard


def test_bootstrap_reports_accuracy_and_saves_a_loadable_mlm(tmp_path, tiny_mlm_dir, mirror_dir):
    src = next(mirror_dir.rglob("wiki1m_for_simcse.txt"))
    lines = src.read_text(encoding="utf-8").splitlines()[:400]
    shard = tmp_path / "shard-000.parquet"
    write_shard(pl.DataFrame({"id": pl.Series(np.arange(len(lines)), dtype=pl.Int64), "text": lines}), shard)
    cfg = BootstrapConfig(base=str(tiny_mlm_dir), steps=4, batch_size=8, warmup_steps=1, heldout_max=20, train_layers=1, threads=2)
    out = tmp_path / "mlm"
    metrics = bootstrap_mlm([shard], out, cfg, device="cpu")
    assert metrics["heldout_sentences"] == 20 and metrics["train_sentences"] == len([t for t in lines if t.strip()]) - 20
    for key in ("top1", "top5", "unigram_top1", "unigram_top5"):
        assert 0.0 <= metrics["after"][key] <= 100.0
    assert metrics["after"]["top5"] >= metrics["after"]["top1"]
    assert metrics["after"]["unigram_top5"] > 0  # the frequency baseline finds common words
    assert json.loads((out / "metrics.json").read_text())["after"] == metrics["after"]
    tok, model = load_masked_lm(str(out), setting="san.mlm", device="cpu")
    with torch.inference_mode():
        logits = model(**tok("the cat [MASK] on the mat", return_tensors="pt")).logits
    assert logits.shape[-1] == tok.vocab_size
