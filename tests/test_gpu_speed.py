"""GPU speed paths checked on CPU: the SAN shard key (determinism promise), the overlapped SAN path, the
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
    from hardneg.train.speed import Prefetch

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
    from hardneg.train.speed import compile_backbone
    from hardneg.train.step_model import StepModel

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
    with caplog.at_level(logging.WARNING, logger="hardneg.train.speed"):
        assert compile_backbone(enc.backbone, torch.device("cpu")) is False
    assert "train.compile" in caplog.text and "no working C compiler" in caplog.text


def test_out_of_memory_error_names_batch_size(tiny_mlm_dir):
    from hardneg.train.presets import build_settings
    from hardneg.train.speed import out_of_memory

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


def test_san_finish_workers_give_identical_shards(tiny_mlm_dir, tmp_path, tmp_path_factory, bert_tokenizer):
    """Decode/filter/rows in 0, 1 or 2 worker processes, any batch size or chunking: the same shard bytes."""
    import hashlib

    from test_lexicon import san_lexicon

    from hardneg.augment.san.key import keyed_settings
    from hardneg.augment.san.lexicon import load_lexicon
    from hardneg.augment.san.mask_predict import (
        MaskPredictor,
        SanConfig,
        augment_chunks,
        augment_shard,
    )
    from hardneg.models.load import load_masked_lm
    from hardneg.shards import write_shard

    assert "finish_workers" not in keyed_settings({"finish_workers": 4})
    lexicon = san_lexicon(tmp_path_factory, bert_tokenizer)
    tok, model = load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")
    probs = load_lexicon(lexicon, tokenizer=tok)["mask_prob"].to_numpy()
    texts = ["The quick brown fox jumps over the lazy dog.", "It rained.", "", "😀😀🎉", "of of of of of",
             "Stock markets fell sharply on Monday after the central bank raised rates."] * 4
    frame = pl.DataFrame({"id": pl.Series(np.arange(len(texts)) * 2 + 1, dtype=pl.Int64), "text": texts})
    digests = set()
    for workers, batch, chunk in ((0, 64, 8192), (1, 3, 7), (2, 5, 9)):
        pred = MaskPredictor(model, tok, probs, SanConfig(seed=4, batch_size=batch))
        parts = augment_chunks([frame[i : i + chunk] for i in range(0, len(texts), chunk)], pred, finish_workers=workers)
        write_shard(pl.concat(parts), tmp_path / "out.parquet")
        digests.add(hashlib.sha256((tmp_path / "out.parquet").read_bytes()).hexdigest())
    write_shard(frame, tmp_path / "in.parquet")  # and through augment_shard's argument
    augment_shard(tmp_path / "in.parquet", tmp_path / "out.parquet", str(tiny_mlm_dir), lexicon, SanConfig(seed=4),
                  device="cpu", progress=False, finish_workers=2)
    digests.add(hashlib.sha256((tmp_path / "out.parquet").read_bytes()).hexdigest())
    assert len(digests) == 1
    assert set(pl.read_parquet(tmp_path / "out.parquet")["status"]) == {"ok", "dropped"}
    with pytest.raises(ValueError, match="finish_workers"):
        augment_chunks([frame], pred, finish_workers=-1)


def test_san_table_decoder_equals_the_tokenizer(bert_tokenizer):
    """The table WordPiece decoder gives batch_decode's strings on any ids: specials first or in
    the middle, '##' pieces first, punctuation runs, empty rows."""
    from hardneg.augment.san.tokens import Ragged, decode, table_decoder

    assert table_decoder(bert_tokenizer) is not None
    rng = np.random.default_rng(0)
    vocab = len(bert_tokenizer)
    punct = np.array([i for t, i in bert_tokenizer.get_vocab().items() if not t.isalnum()])
    rows = [rng.integers(0, vocab, rng.integers(0, 30)) for _ in range(400)]
    rows += [rng.choice(punct, rng.integers(0, 20)) for _ in range(400)]
    rows += [np.array([], dtype=np.int64), np.array([101, 102]), np.array([100, 1001, 2023]), np.array([2023, 100, 1005, 1055])]
    want = bert_tokenizer.batch_decode([r.tolist() for r in rows], skip_special_tokens=True, clean_up_tokenization_spaces=True)
    assert decode(bert_tokenizer, rows) == want
    assert decode(bert_tokenizer, Ragged.from_rows(rows)) == want
    with pytest.raises(ValueError, match="outside the vocabulary"):
        decode(bert_tokenizer, [np.array([vocab])])


def test_san_ragged_rows_take_slice_and_truncation(bert_tokenizer):
    from hardneg.augment.san.tokens import Ragged, encode

    rows = [np.array([1, 2, 3]), np.array([], dtype=np.int64), np.array([4]), np.array([5, 6])]
    r = Ragged.from_rows(rows)
    assert [x.tolist() for x in r] == [[1, 2, 3], [], [4], [5, 6]] and r.lengths.tolist() == [3, 0, 1, 2]
    assert [x.tolist() for x in r.take(np.array([3, 0, 1]))] == [[5, 6], [1, 2, 3], []]
    assert [x.tolist() for x in r.slice(1, 4)] == [[], [4], [5, 6]]
    texts = ["a b c d e f g h", "a b", "[UNK] [UNK] x"]
    seqs, trunc, unk = encode(bert_tokenizer, texts, 5)
    full = bert_tokenizer(texts)["input_ids"]
    assert [s.tolist() for s in seqs] == [full[0][:4] + full[0][-1:], full[1], full[2]]
    assert trunc.tolist() == [True, False, False] and unk.tolist() == [0, 0, 2]
