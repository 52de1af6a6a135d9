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


def test_masked_logits_equal_the_full_output_at_the_masked_positions(tiny_mlm_dir):
    from hardneg.augment.san.bootstrap_mlm import masked_logits

    tok, model = load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")
    enc = tok(["the cat sat on the mat", "a dog ran"], padding=True, return_tensors="pt")
    where = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    where[0, 2] = where[0, 5] = where[1, 1] = True
    with torch.inference_mode():
        full = model(**enc).logits[where]
        part = masked_logits(model, enc["input_ids"], enc["attention_mask"], where)
    # the same position-wise ops on fewer rows: only the matmul blocking may differ, a few float32
    # ulps of the largest logit per accumulated term (hidden size 32)
    tol = 32 * torch.finfo(torch.float32).eps * float(full.abs().max())
    assert part.shape == full.shape and float((part - full).abs().max()) <= tol


def test_source_file_text_is_deduplicated_line_numbered_and_leaves_evaluation_sentences_out(tmp_path):
    from hardneg.augment.san.bootstrap_mlm import read_sentences
    from hardneg.data.leakage import match_key

    src = tmp_path / "corpus.txt"
    src.write_text("A first line.\n\nA  first line.\nA man is playing a guitar.\nThe last one.\n", encoding="utf-8")
    ids, texts = read_sentences([], BootstrapConfig(text="source_file"), src, {match_key("a man is playing a guitar")})
    assert ids == [0, 4] and texts == ["A first line.", "The last one."]
    ids, _ = read_sentences([], BootstrapConfig(text="source_file", max_sentences=1), src)
    assert ids == [0]


def test_whole_word_masking_chooses_every_piece_of_a_word_together():
    from hardneg.augment.san.bootstrap_mlm import _choose

    ids = torch.arange(10, 22).repeat(64, 1)
    attn = torch.ones_like(ids)
    words = torch.tensor([-1, 0, 0, 0, 1, 2, 2, 3, 4, 4, 4, -1]).repeat(64, 1)  # -1: [CLS]/[SEP]
    special = torch.zeros(30, dtype=torch.bool)
    chosen = _choose(ids, attn, special, words, 0.3, torch.Generator().manual_seed(0))
    for w in range(5):
        cols = chosen[:, words[0] == w]
        assert bool((cols == cols[:, :1]).all())  # all pieces of word w chosen or none
    assert not chosen[:, 0].any() and not chosen[:, -1].any() and 0 < int(chosen.sum()) < chosen.numel()


def test_split_forward_equals_the_full_output_at_every_layer_boundary(tiny_mlm_dir):
    from hardneg.augment.san.bootstrap_mlm import lower_hidden, masked_logits, upper_logits

    tok, model = load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")
    model.eval()
    enc = tok(["the cat sat on the mat", "a dog ran"], padding=True, return_tensors="pt")
    where = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    where[0, 2] = where[1, 1] = True
    with torch.inference_mode():
        full = masked_logits(model, enc["input_ids"], enc["attention_mask"], where)
        for k in range(len(model.base_model.encoder.layer) + 1):
            hidden = lower_hidden(model, enc["input_ids"], enc["attention_mask"], k)
            part = upper_logits(model, hidden, enc["attention_mask"], where, k)
            assert torch.equal(part, full), k  # the same modules in the same order on the same tensors


def test_cached_bootstrap_is_deterministic_for_a_seed_and_trains(tmp_path, tiny_mlm_dir, mirror_dir):
    from hardneg.augment.san.bootstrap_mlm import fit_mlm, load_for_bootstrap

    lines = next(mirror_dir.rglob("wiki1m_for_simcse.txt")).read_text(encoding="utf-8").splitlines()[:200]
    results = []
    for layers in (0, 1, 0):
        cfg = BootstrapConfig(base=str(tiny_mlm_dir), steps=12, batch_size=8, warmup_steps=1, heldout_max=20,
                              train_layers=layers, cache_frozen=True, threads=1)
        tok, model = load_for_bootstrap(cfg, "cpu")
        m = fit_mlm(model, tok, list(range(len(lines))), lines, cfg)
        results.append((m["final_loss_mean_last_20"], m["after"], model.cls.predictions.transform.dense.weight.clone()))
    assert results[0][0] == results[2][0] and results[0][1] == results[2][1] and torch.equal(results[0][2], results[2][2])
    assert results[0][0] != results[1][0]  # the top layer trained on the cached lower layers' output


def test_lr_schedules_warm_up_then_decay_or_hold():
    from hardneg.augment.san.bootstrap_mlm import _lr_at

    for schedule, end in (("cosine", 0.0), ("linear", 0.0), ("constant", 1.0)):
        lr_at = _lr_at(BootstrapConfig(steps=10, warmup_steps=2, schedule=schedule))
        assert lr_at(0) == 0.5 and lr_at(2) == 1.0 and abs(lr_at(10) - end) < 1e-12
    assert abs(_lr_at(BootstrapConfig(steps=10, warmup_steps=2, schedule="linear"))(6) - 0.5) < 1e-12
