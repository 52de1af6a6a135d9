"""SAN mask-predict: determinism, the replace/forbid options, bad input, the shard contract."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest
import torch
from test_lexicon import san_lexicon

from hardneg.augment.san import rng as san_random
from hardneg.augment.san.lexicon import load_lexicon
from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig, augment_frame, augment_shard
from hardneg.models.load import load_masked_lm
from hardneg.shards import write_shard

torch.set_num_threads(2)

SENTENCES = [
    "A man is playing a guitar on the stage in front of many people.",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "   ",
    "😀😀🎉",
    "这是一个中文句子，没有英文。",
    "Hi.",
    "Scientists discovered a new species of frog in the rainforest last year.",
    "She did not want to go to the party because she was tired.",
    "The committee approved the budget for the new hospital building.",
    "It rained.",
    "Stock markets fell sharply on Monday after the central bank raised interest rates.",
]


@pytest.fixture(scope="module")
def lexicon_path(tmp_path_factory, bert_tokenizer):
    return san_lexicon(tmp_path_factory, bert_tokenizer)


@pytest.fixture(scope="module")
def mlm(tiny_mlm_dir):
    return load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")


@pytest.fixture(scope="module")
def mask_prob(lexicon_path, mlm):
    return load_lexicon(lexicon_path, tokenizer=mlm[0])["mask_prob"].to_numpy()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    texts = SENTENCES * 6  # 72 rows: several equal-length groups, some larger than a batch
    frame = pl.DataFrame({"id": pl.Series(np.arange(len(texts)) * 3 + 5, dtype=pl.Int64), "text": texts})
    path = tmp_path_factory.mktemp("san-in") / "shard-000.parquet"
    write_shard(frame, path)
    return path, frame


def _frame(mlm, mask_prob, frame, **kw):
    tok, model = mlm
    return augment_frame(frame, MaskPredictor(model, tok, mask_prob, SanConfig(**kw)))


# the optional decoding rules (hardneg.augment.san.fill) keep the determinism promise too
RULES = [{}, {"same_kind": True, "forbid_adjacent": True}]


@pytest.mark.parametrize("rules", RULES, ids=["default", "same_kind+forbid_adjacent"])
def test_shards_identical_for_any_batch_size_and_chunking(tmp_path, corpus, lexicon_path, tiny_mlm_dir, rules):
    path, _ = corpus
    digests = set()
    for bs, chunk in ((1, 5), (7, 8192), (64, 13)):
        out = tmp_path / f"bs{bs}.parquet"
        augment_shard(path, out, str(tiny_mlm_dir), lexicon_path, SanConfig(batch_size=bs, seed=11, **rules), device="cpu", chunk_rows=chunk, progress=False)
        digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    assert len(digests) == 1


@pytest.mark.parametrize("rules", RULES, ids=["default", "same_kind+forbid_adjacent"])
def test_same_rows_whatever_the_shard_split(mlm, mask_prob, corpus, rules):
    frame = corpus[1][:36]
    kw = {"seed": 3, "decoding": "sample", "top_k": 20, **rules}
    whole = _frame(mlm, mask_prob, frame, **kw)
    parts = pl.concat([_frame(mlm, mask_prob, frame[:17], **kw), _frame(mlm, mask_prob, frame[17:], **kw)])
    assert whole.equals(parts)
    other_seed = _frame(mlm, mask_prob, frame, **(kw | {"seed": 4}))
    assert not other_seed.equals(whole)


def test_contract_columns_and_bad_input(mlm, mask_prob, corpus):
    _, frame = corpus
    out = _frame(mlm, mask_prob, frame, seed=0)
    for col, dtype in {"id": pl.Int64, "text": pl.String, "status": pl.String, "reason": pl.String,
                       "augmenter": pl.String, "san": pl.String, "iter1": pl.String, "iter4": pl.String,
                       "masked1": pl.List(pl.Int64), "masked4": pl.List(pl.Int64)}.items():
        assert out.schema[col] == dtype, col
    assert out["id"].to_list() == frame["id"].to_list()  # row order and ids = corpus
    assert set(out["augmenter"]) == {"san"}
    reasons = dict(zip(out["text"][:12], out["reason"][:12]))
    assert reasons[""] == "input:empty" and reasons["   "] == "input:empty"
    assert reasons["😀😀🎉"] == "input:no_letters"
    assert reasons["这是一个中文句子，没有英文。"] == "input:non_latin_script"
    assert reasons["Hi."] == "quality:too_short"
    # every row accounted for; dropped rows carry a reason and no negative, ok rows the 4th iteration
    assert out.filter(pl.col("status") == "dropped")["reason"].null_count() == 0
    assert out.filter(pl.col("status") == "dropped")["san"].null_count() == out.filter(pl.col("status") == "dropped").height
    ok = out.filter(pl.col("status") == "ok")
    assert ok.height > 0 and ok["reason"].null_count() == ok.height
    assert (ok["san"] == ok["iter4"]).all()


def test_only_masked_positions_change_and_never_to_themselves(mlm, mask_prob):
    tok, model = mlm
    pred = MaskPredictor(model, tok, mask_prob, SanConfig(seed=1, forbid_original=True))
    enc = tok(SENTENCES[0])["input_ids"]
    seqs = [np.asarray(enc)] * 5
    new, masked = pred.iterate(seqs, np.arange(5), iteration=1)
    for s, n, m in zip(seqs, new, masked):
        changed = np.flatnonzero(s != n).tolist()
        assert changed == m  # forbid_original: every masked token changes, nothing else does
        assert n[0] == tok.cls_token_id and n[-1] == tok.sep_token_id
    # masks differ between sentence ids (seeded per sentence), the first iteration masks something
    assert len({tuple(m) for m in masked}) > 1


def test_default_is_plain_argmax_at_masked_positions(mlm, mask_prob):
    """SAN §3.1 / reference: argmax over the vocabulary (specials aside), the token itself allowed."""
    tok, model = mlm
    pred = MaskPredictor(model, tok, mask_prob, SanConfig(seed=1))
    assert not pred.cfg.forbid_original
    seqs = [np.asarray(tok(s)["input_ids"]) for s in SENTENCES[:4]]
    new, masked = pred.iterate(seqs, np.arange(4), iteration=1)
    assert any(masked)
    for s, n, m in zip(seqs, new, masked):
        assert np.flatnonzero(s != n).tolist() == [i for i in m if s[i] != n[i]]  # only masked move
        inp = torch.as_tensor(s).clone()
        inp[m] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=inp[None]).logits[0].float()
        logits[:, pred.forbidden.cpu()] = float("-inf")
        assert n[m].tolist() == logits[m].argmax(-1).tolist()


def test_replace_all_reproduces_reference_defect(mlm, mask_prob):
    tok, model = mlm
    enc = np.asarray(tok(SENTENCES[1])["input_ids"])
    masked_only, _ = MaskPredictor(model, tok, mask_prob, SanConfig(seed=2)).iterate([enc], np.array([0]), 1)
    all_pos, m = MaskPredictor(model, tok, mask_prob, SanConfig(seed=2, replace="all")).iterate([enc], np.array([0]), 1)
    unmasked_changed = [j for j in range(1, len(enc) - 1) if j not in m[0] and all_pos[0][j] != enc[j]]
    assert unmasked_changed  # the random tiny MLM rewrites unmasked tokens when replace=all
    assert all_pos[0][0] == tok.cls_token_id and all_pos[0][-1] == tok.sep_token_id
    assert (np.flatnonzero(masked_only[0] != enc) == np.asarray(m[0])).all()


def test_truncation_is_recorded_and_retokenize_runs(mlm, mask_prob):
    long = " ".join(["The old bridge crossed the wide river near the town."] * 20)
    frame = pl.DataFrame({"id": pl.Series([0, 1], dtype=pl.Int64), "text": [long, SENTENCES[1]]})
    out = _frame(mlm, mask_prob, frame, max_length=32)
    assert out["truncated"].to_list() == [True, False]
    assert max(max(m) for m in out["masked1"].to_list() if m) < 32
    out_rt = _frame(mlm, mask_prob, frame, max_length=32, retokenize=True)
    assert out_rt.height == 2 and out_rt["iter4"].null_count() == 0


def test_empty_input_and_counter_rng(mlm, mask_prob):
    empty = pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)})
    out = _frame(mlm, mask_prob, empty)
    assert out.height == 0 and "masked4" in out.columns
    u = san_random.uniform(0, np.array([1, 2, 1]), 1, 50, 0)
    assert u.shape == (3, 50) and (u >= 0).all() and (u < 1).all()
    assert (u[0] == u[2]).all() and not (u[0] == u[1]).all()
    assert abs(san_random.uniform(5, np.arange(200), 3, 100, 0).mean() - 0.5) < 0.01


def test_bad_config_and_input_files(tmp_path, lexicon_path, tiny_mlm_dir):
    with pytest.raises(ValueError, match="san.replace"):
        SanConfig(replace="everything")
    with pytest.raises(FileNotFoundError, match="input shard not found"):
        augment_shard(tmp_path / "nope.parquet", tmp_path / "o.parquet", str(tiny_mlm_dir), lexicon_path, SanConfig())
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"id": [1], "sentence": ["x"]}).write_parquet(bad)
    with pytest.raises(ValueError, match="missing text"):
        augment_shard(bad, tmp_path / "o.parquet", str(tiny_mlm_dir), lexicon_path, SanConfig(), progress=False)


def test_bf16_precision_is_recorded_deterministic_and_leaves_the_model_alone(tmp_path, corpus, lexicon_path, tiny_mlm_dir, mlm, mask_prob):
    tok, model = mlm
    assert MaskPredictor(model, tok, mask_prob, SanConfig()).precision == "fp32"  # auto on CPU
    with pytest.raises(ValueError, match="san.precision"):
        SanConfig(precision="half")
    pred = MaskPredictor(model, tok, mask_prob, SanConfig(precision="bf16"))
    assert pred.precision == "bf16"
    dtypes = {p.dtype for p in model.parameters()}
    assert dtypes == {torch.float32}  # the caller's model is not cast; the predictor holds a copy
    assert {m.weight.dtype for m in pred.model.modules() if isinstance(m, torch.nn.Linear)} == {torch.bfloat16}
    path, frame = corpus
    digests, stats = set(), None
    for bs in (1, 64):
        out = tmp_path / f"bf16-{bs}.parquet"
        stats = augment_shard(path, out, str(tiny_mlm_dir), lexicon_path, SanConfig(batch_size=bs, seed=2, precision="bf16"), device="cpu", progress=False)
        digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    assert len(digests) == 1 and stats["precision"] == "bf16" and stats["device"] == "cpu"
    fp32 = _frame(mlm, mask_prob, frame, seed=2)
    bf16 = pl.read_parquet(tmp_path / "bf16-1.parquet")
    assert fp32["masked1"].to_list() == bf16["masked1"].to_list()  # masks do not depend on precision


def test_reference_clean_up_knobs():
    """max_chars 300 + the reference's period rule (last char not in string.punctuation)."""
    from hardneg.augment.san.mask_predict import _prepare_text

    ref = SanConfig(max_chars=300, append_period=True)
    assert _prepare_text("A b c", ref) == "A b c."
    assert _prepare_text("A b (c)", ref) == "A b (c)"  # ")" is punctuation to the reference
    assert _prepare_text("x" * 400, ref) == "x" * 300 + "."
    assert _prepare_text("A b c", SanConfig()) == "A b c"


def test_reference_overlay_sets_every_reference_knob():
    """experiments/reference/san.yaml validates and yields the reference code's SanConfig."""
    from pathlib import Path

    from hardneg.config import load_config

    root = Path(__file__).resolve().parents[1]
    cfg = load_config([root / "config.yaml", root / "experiments/reference/san.yaml"])["san"]
    run = {k: v for k, v in cfg.items() if k not in ("mlm", "chunk_rows", "threads", "gpus", "finish_workers")}
    san = SanConfig.from_dict(run)
    assert (san.replace, san.retokenize, san.max_chars, san.append_period) == ("all", True, 300, True)
    assert not san.forbid_original and san.decoding == "argmax" and san.iterations == 4
    q = san.quality
    assert (q.min_words, q.reject_identical, q.postprocess) == (0, False, "none")
