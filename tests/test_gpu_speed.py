"""Issue 15 on CPU: the SAN shard key (determinism promise), the overlapped SAN path, the
trainer's background tokenization, static shapes, compile fallback and the out-of-memory error."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest
import torch

from hardneg.augment.san.key import keyed_settings

torch.set_num_threads(2)


def test_san_key_has_batch_size_unless_fp32():
    base = {"iterations": 4, "chunk_rows": 8192, "threads": 2, "gpus": 1}
    for precision in ("auto", "bf16"):
        a = keyed_settings(base | {"precision": precision, "batch_size": 64})
        b = keyed_settings(base | {"precision": precision, "batch_size": 1024})
        assert a != b and a["batch_size"] == 64
        assert keyed_settings(base | {"precision": precision, "chunk_rows": 100}) != keyed_settings(base | {"precision": precision})
        # the defaults are keyed too (a config without the keys)
        d = keyed_settings({"precision": precision})
        assert d["batch_size"] == 64 and d["chunk_rows"] == 8192
    a = keyed_settings(base | {"precision": "fp32", "batch_size": 64})
    b = keyed_settings(base | {"precision": "fp32", "batch_size": 1024})
    assert a == b and "batch_size" not in a
    assert keyed_settings(base | {"precision": "fp32", "chunk_rows": 100}) == a
    for k in ("chunk_rows", "threads", "gpus"):
        assert k not in a
    # precision itself is keyed; auto stands for bf16 on CUDA
    assert keyed_settings(base)["batch_size"] == 64


def test_san_overlapped_chunks_give_the_same_rows(tiny_mlm_dir, tmp_path_factory, bert_tokenizer):
    from test_lexicon import san_lexicon

    from hardneg.augment.san.lexicon import load_lexicon
    from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig, augment_chunks
    from hardneg.models.load import load_masked_lm

    tok, model = load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")
    probs = load_lexicon(san_lexicon(tmp_path_factory, bert_tokenizer), tokenizer=tok)["mask_prob"].to_numpy()
    texts = ["The quick brown fox jumps over the lazy dog.", "It rained.", "",
             "Stock markets fell sharply on Monday after the central bank raised rates."] * 5
    frame = pl.DataFrame({"id": pl.Series(np.arange(len(texts)), dtype=pl.Int64), "text": texts})
    pred = MaskPredictor(model, tok, probs, SanConfig(seed=5, batch_size=3))
    chunks = [frame[:7], frame[7:13], frame[13:]]
    plain = pl.concat(augment_chunks(iter(chunks), pred, overlap=False))
    overlapped = pl.concat(augment_chunks(iter(chunks), pred, overlap=True))
    assert plain.equals(overlapped) and plain.height == len(texts)
    assert (plain["status"] == "ok").sum() > 0


def test_prefetch_keeps_order_and_reraises_at_the_failing_step():
    from hardneg.train.trainer import Prefetch

    pre = Prefetch(lambda i: i * i, 3, 9, depth=2)
    assert [pre.next() for _ in range(6)] == [9, 16, 25, 36, 49, 64]
    pre.close()

    def fn(i):
        if i == 2:
            raise ValueError("bad row at step 2")
        return i

    pre = Prefetch(fn, 0, 5)
    assert pre.next() == 0 and pre.next() == 1
    with pytest.raises(ValueError, match="step 2"):
        pre.next()
    pre.close()
    # closed early while the worker waits on a full queue
    pre = Prefetch(lambda i: i, 0, 1000, depth=1)
    pre.next()
    pre.close()


def test_static_width_tokenization_and_compile_fallback(tiny_mlm_dir, monkeypatch, caplog):
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import StepModel, compile_backbone

    s = build_settings("simcse", str(tiny_mlm_dir), seed=1, overrides={"max_length": 16, "compile": True})
    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), s.pooler, s.max_length, True)
    sm = StepModel(enc, s)
    texts = ["a short one.", "another sentence that is a little bit longer than the first"]
    dyn = sm.tokenize(texts, {})
    sm.static_width = True
    fixed = sm.tokenize(texts, {})
    assert fixed["views"]["input_ids"].shape == (4, 16) and dyn["views"]["input_ids"].shape[1] < 16
    w = dyn["views"]["input_ids"].shape[1]
    assert torch.equal(fixed["views"]["input_ids"][:, :w], dyn["views"]["input_ids"])
    assert int(fixed["views"]["attention_mask"][:, w:].sum()) == 0
    # padding to a fixed width leaves the embeddings unchanged (masked attention + pooling):
    # float32, 2 layers of 32: tolerance = eps * |x| (~1) * a few hundred accumulations
    enc.eval()
    with torch.no_grad():
        a, b = sm(texts, {}, dyn)["anchor"], sm(texts, {}, fixed)["anchor"]
    torch.testing.assert_close(a, b, rtol=0, atol=torch.finfo(torch.float32).eps * 512)

    def broken(*a, **k):
        raise RuntimeError("no working C compiler")

    monkeypatch.setattr(torch, "compile", broken)
    with caplog.at_level(logging.WARNING, logger="hardneg.train.trainer"):
        assert compile_backbone(enc.backbone, torch.device("cpu")) is False
    assert "train.compile" in caplog.text and "no working C compiler" in caplog.text


def test_out_of_memory_error_names_batch_size(tiny_mlm_dir):
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import out_of_memory

    s = build_settings("simcse", str(tiny_mlm_dir), seed=1, overrides={"batch_size": 512})
    err = out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), s,
                        torch.device("cpu"))
    assert "batch_size=512" in str(err) and "Tried to allocate" in str(err)


def test_san_rust_encode_decode_equal_transformers(bert_tokenizer):
    from hardneg.augment.san.mask_predict import _decode, _encode

    texts = ["The quick brown fox jumps over the lazy dog.", "", "   ", "😀😀🎉", "这是一个中文句子，没有英文。",
             "Hi.", "don't stop - it's 3.5 % of U.S. GDP , isn ' t it ?", "ünïcödé Straße café"]
    seqs, _, _ = _encode(bert_tokenizer, texts, 128)
    ref = bert_tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    assert [s.tolist() for s in seqs] == ref
    assert _decode(bert_tokenizer, seqs) == bert_tokenizer.batch_decode(
        ref, skip_special_tokens=True, clean_up_tokenization_spaces=True)
