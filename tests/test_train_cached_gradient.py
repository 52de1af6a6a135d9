"""Cached-gradient training (train.mini_batch_size): the parameter gradient of a step embedded in
chunks, loss on the whole batch, chunks re-run with the cached embedding gradient, equals the
one-pass gradient for every loss family; dropout is replayed; unsupported methods are refused."""

from __future__ import annotations

import json

import pytest
import torch
from test_train_trainer import (  # noqa: F401  # fixtures and the DDP worker
    _ddp_worker,
    _free_port,
    _RecordingAdamW,
    settings,
    shards,
    wiki_lines,
)

from hardneg.train import cached_gradient
from hardneg.train import distributed as D
from hardneg.train.cached_gradient import CachedStep, chunk_tokens
from hardneg.train.methods import preset
from hardneg.train.methods.objective import Objective
from hardneg.train.model import ContrastiveEncoder
from hardneg.train.presets import merge_settings
from hardneg.train.settings import TrainSettings
from hardneg.train.step_model import StepModel
from hardneg.train.teachers import Teachers, TeacherSpec
from hardneg.train.trainer import train

EPS64 = torch.finfo(torch.float64).eps
EPS32 = torch.finfo(torch.float32).eps
N, CHUNK, MAX_LEN = 10, 4, 24  # chunks of 4, 4 and a partial 2
TEXTS = [f"sentence {i} says {' '.join(['something'] * (i % 4 + 1))} about topic {i % 3}" for i in range(N)]
EXTRA = {"san": [t.replace("says", "denies") for t in TEXTS], "negation": ["not " + t for t in TEXTS],
         "paraphrase": [t + " indeed" for t in TEXTS],
         "syncse": [f"pool sentence {i} number {j}" for i in range(N) for j in range(2)]}
# one preset per loss family, and the methods whose extra views or terms the cache must carry
FAMILIES = {
    "in-batch": "simcse",
    "hard-negative": "simcse_san",  # HiNCE over SAN negatives (their own dropout pass)
    "prompt-mask": "sncse",  # [MASK] pooler, two templates, BML on negations
    "ranking-teachers": "rankcse",  # JS consistency + ListMLE distillation from a teacher
    "margin-recall": "osscse",  # negation + paraphrase views, recall term on the parameters
    "pool-negatives": "syncse",  # k pool negatives per sentence (k rows per chunk sentence)
    "positive-mixing": "hncse_pm",  # HNCSE: mixing acts on the whole batch's embeddings
    "negative-mixing": "hncse_hnm",  # its random pair draws come after the forward in both paths
}


def _settings(method: str, dropout: float, **kw) -> TrainSettings:
    over = {"batch_size": N, "max_length": MAX_LEN, "dropout": dropout, "allow_untrained_teacher": True}
    if preset(method).settings.get("negatives") == "san":
        over["san_dropout"] = 0.2 if dropout else 0.0
    if method == "sncse":
        # the preset's 1e-3 would leave the BML gradient below the bound
        over["method_settings"] = {"bml": {"weight": 1.0}}
    if method == "syncse":
        over["method_settings"] = {"syncse": {"negatives": 2, "projection_dropout": dropout}}
    d = merge_settings(preset(method).settings, {"method": method, "init_model": "tiny", **over, **kw})
    return TrainSettings.from_dict(d)


def _tiny_encoder(tokenizer, s: TrainSettings, seed: int = 0, mlp: bool | None = None) -> ContrastiveEncoder:
    from transformers import BertConfig, BertModel

    from hardneg.train.methods.objective import prepare_encoder

    torch.manual_seed(seed)
    p = s.dropout or 0.0
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=p,
                     attention_probs_dropout_prob=p)
    enc = ContrastiveEncoder(BertModel(cfg, add_pooling_layer=False), tokenizer, s.pooler, s.max_length,
                             s.mlp_only_train if mlp is None else mlp)
    prepare_encoder(enc, s)
    return enc.double().train()


def _teacher_sims(tokenizer, s: TrainSettings) -> dict[str, torch.Tensor] | None:
    if not s.needs_teacher():
        return None
    teacher = _tiny_encoder(tokenizer, s, seed=1, mlp=False).eval().requires_grad_(False)
    spec = TeacherSpec("test teacher", "tiny", 1.0, "cls_before_pooler", None)
    sims = Teachers([spec], [teacher], s).similarities(TEXTS, EXTRA["san"], D.DistInfo())
    return {k: v.double() for k, v in sims.items()}


def _extra(s: TrainSettings) -> dict[str, list[str]]:
    cols = s.needed_columns() + (["syncse"] if s.uses("syncse") else [])
    return {c: EXTRA[c] for c in cols}


def _grads(enc: ContrastiveEncoder) -> list[torch.Tensor]:
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in enc.parameters()]


def one_pass(enc, s, sims, seed: int, chunked: bool = False) -> list[torch.Tensor]:
    """The reference gradient: every view embedded WITH a graph, loss, backward. ``chunked``:
    the views go through the encoder in the same chunks as the cache (with dropout on, the
    masks then are the ones the cache's first pass draws)."""
    model, objective, extra = StepModel(enc, s), Objective(s, enc), _extra(s)
    tokens = model.tokenize(TEXTS, extra)
    enc.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    if chunked:
        outs = [model(TEXTS[lo:hi], {}, tok) for lo, hi, tok in chunk_tokens(tokens, N, CHUNK)]
        emb = {k: torch.cat([o[k] for o in outs]) for k in outs[0]}
    else:
        emb = model(TEXTS, extra, tokens)
    loss, _ = objective(emb, D.DistInfo(), sims)
    loss.backward()
    return _grads(enc)


def cached(enc, s, sims, seed: int) -> list[torch.Tensor]:
    model, objective, extra = StepModel(enc, s), Objective(s, enc), _extra(s)
    step = CachedStep(model, TEXTS, extra, model.tokenize(TEXTS, extra), CHUNK, torch.device("cpu"))
    enc.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    emb = step.embed()
    loss, _ = objective(emb, D.DistInfo(), sims)
    loss.backward()
    step.backward()
    return _grads(enc)


def bound(enc: ContrastiveEncoder, s: TrainSettings, grads: list[torch.Tensor], eps: float) -> float:
    """Normwise float bound on |cached - one pass| per gradient component. The two computations
    are equal in exact arithmetic and differ only in summation order: the chunks' matmuls see
    fewer rows (forward rounding of each embedding), and each parameter gradient is a sum over
    every token row of the step, accumulated per chunk instead of in one matmul. Any such sum
    has at most T terms (T = token rows of the step: views x N x max_length), each carrying
    relative error <= T*eps (Higham's gamma_T), along a chain of at most DEPTH = 40 operations
    (2 layers x 7 matmul/softmax/LayerNorm, embeddings, pooler, MLP/projection, loss, forward
    and backward). So rel = T*DEPTH*eps, times the gradient's 2-norm (the errors are normwise)."""
    views = 2 + len(_extra(s)) + (1 if s.uses("syncse") else 0)  # SynCSE: k = 2 rows per sentence
    rel = views * N * MAX_LEN * 40 * eps
    return rel * float(torch.sqrt(sum((g**2).sum() for g in grads)))


def _max_err(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_cached_gradient_equals_one_pass_gradient(bert_tokenizer, family):
    """Dropout off: the cached gradient is the one-pass gradient (one forward of every view,
    the trainer's path) up to float64 rounding, with a partial last chunk (10 = 4 + 4 + 2)."""
    s = _settings(FAMILIES[family], dropout=0.0)
    enc = _tiny_encoder(bert_tokenizer, s)
    sims = _teacher_sims(bert_tokenizer, s)
    ref = one_pass(enc, s, sims, seed=3)
    got = cached(enc, s, sims, seed=3)
    assert float(torch.sqrt(sum((g**2).sum() for g in ref))) > 0
    assert _max_err(got, ref) <= bound(enc, s, ref, EPS64)


@pytest.mark.parametrize("family", ["in-batch", "hard-negative", "prompt-mask", "ranking-teachers"])
def test_dropout_masks_are_replayed(bert_tokenizer, family, monkeypatch):
    """Dropout on (the SimCSE positive IS the dropout noise): the cached gradient is the
    gradient of the loss on the embeddings its first pass made, i.e. the graph-keeping pass over
    the same chunks from the same seed. Without the RNG replay the re-run draws other masks and
    the gradient is off by far more than rounding (checked here, so the test can fail)."""
    s = _settings(FAMILIES[family], dropout=0.1)
    enc = _tiny_encoder(bert_tokenizer, s)
    sims = _teacher_sims(bert_tokenizer, s)
    ref = one_pass(enc, s, sims, seed=5, chunked=True)
    tol = bound(enc, s, ref, EPS64)
    assert _max_err(cached(enc, s, sims, seed=5), ref) <= tol
    monkeypatch.setattr(cached_gradient.RngState, "restore", lambda self: None)  # no replay
    assert _max_err(cached(enc, s, sims, seed=5), ref) > 1e6 * tol


def test_chunks_split_every_view_and_the_last_chunk_is_partial():
    tokens = {"groups": [("anchor", 5), ("positive", 5), ("syncse", 10)],
              "views": {"input_ids": torch.arange(20).unsqueeze(1), "attention_mask": torch.ones(20, 1)},
              "san": {"input_ids": torch.arange(100, 105).unsqueeze(1), "attention_mask": torch.ones(5, 1)}}
    chunks = chunk_tokens(tokens, 5, 2)
    assert [(lo, hi) for lo, hi, _ in chunks] == [(0, 2), (2, 4), (4, 5)]
    last = chunks[2][2]
    assert last["groups"] == [("anchor", 1), ("positive", 1), ("syncse", 2)]
    assert last["views"]["input_ids"].squeeze(1).tolist() == [4, 9, 18, 19]
    assert last["san"]["input_ids"].squeeze(1).tolist() == [104]
    first = chunks[0][2]
    assert first["views"]["input_ids"].squeeze(1).tolist() == [0, 1, 5, 6, 10, 11, 12, 13]
    with pytest.raises(ValueError, match="mini_batch_size"):
        chunk_tokens(tokens, 5, 0)


@pytest.mark.parametrize("method", ["hicl_simcse", "hicl_sncse"])
def test_unsupported_method_is_refused_naming_the_setting(method):
    with pytest.raises(ValueError) as err:
        TrainSettings.from_dict({**preset(method).settings, "method": method, "mini_batch_size": 64})
    msg = str(err.value)
    assert "mini_batch_size" in msg and method in msg and "\n" not in msg


def test_unset_mini_batch_size_leaves_the_run_key_and_settings_unchanged():
    """Unset, the setting is absent from to_dict (settings.json, summary.json, rule params)
    and from the fingerprint; set, it keys the run (per-chunk dropout masks change results)."""
    base = TrainSettings()
    assert "mini_batch_size" not in base.to_dict()
    on = TrainSettings(mini_batch_size=16)
    assert on.to_dict()["mini_batch_size"] == 16
    assert on.fingerprint() != base.fingerprint()
    assert TrainSettings.from_dict(base.to_dict()) == base
    with pytest.raises(ValueError, match="mini_batch_size"):
        TrainSettings(mini_batch_size=0)


@pytest.mark.parametrize("method", ["simcse", "osscse"])
def test_trainer_step_with_mini_batches_has_the_one_pass_gradient(tmp_path, tiny_mlm_dir, shards, method,  # noqa: F811
                                                                  monkeypatch):
    """The trainer end to end (autocast context, grad scaler, clipping, recall term): without
    dropout, the first step's gradient with mini_batch_size 3 (batch 4: chunks 3 + 1) equals the
    one-pass run's within float32 rounding (bound as above, float32 eps, T = 3 views x 4 x 24)."""
    monkeypatch.setattr(torch.optim, "AdamW", _RecordingAdamW)
    runs = {}
    for name, mbs in (("one", None), ("cached", 3)):
        monkeypatch.setattr(_RecordingAdamW, "record", [])
        s = settings(tiny_mlm_dir, method, dropout=0.0, max_steps=2, mini_batch_size=mbs)
        train(s, shards["corpus"], tmp_path / name, {k: shards[k] for k in ("negation", "paraphrase")})
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        runs[name] = (_RecordingAdamW.record, [r for r in map(json.loads, lines) if r["kind"] == "train"])
    (g_one, rows_one), (g_c, rows_c) = runs["one"], runs["cached"]
    rel = 3 * 4 * 24 * 40 * EPS32
    assert rows_c[0]["loss"] == pytest.approx(rows_one[0]["loss"], rel=rel)
    assert rows_c[0]["grad_norm"] == pytest.approx(rows_one[0]["grad_norm"], rel=rel)
    assert max(float((a - b).abs().max()) for a, b in zip(g_c[0], g_one[0])) <= rel * rows_one[0]["grad_norm"]
    summary = json.loads((tmp_path / "cached" / "summary.json").read_text())
    assert summary["settings"]["mini_batch_size"] == 3
    assert "mini_batch_size" not in json.loads((tmp_path / "one" / "summary.json").read_text())["settings"]


def test_ddp_cached_gradient_uses_the_gathered_batch(tmp_path, tiny_mlm_dir, shards, monkeypatch):  # noqa: F811
    """2 gloo ranks x batch 2 with mini-batches of 1 (the loss on the all-gathered embeddings,
    chunk re-runs under no_sync until the last) give the gradient of 1 process x batch 4 in one
    pass, dropout off, within float32 rounding (T = 2 views x 4 x 24 token rows, DEPTH 40)."""
    import torch.multiprocessing as mp

    s = settings(tiny_mlm_dir, "simcse", batch_size=2, dropout=0.0, max_steps=1, mini_batch_size=1)
    mp.spawn(_ddp_worker, args=(2, _free_port(), s, shards["corpus"], str(tmp_path / "ddp")), nprocs=2, join=True)
    monkeypatch.setattr(torch.optim, "AdamW", _RecordingAdamW)
    monkeypatch.setattr(_RecordingAdamW, "record", [])
    train(settings(tiny_mlm_dir, "simcse", batch_size=4, dropout=0.0, max_steps=1), shards["corpus"], tmp_path / "one")
    g_ddp = [torch.load(tmp_path / "ddp" / f"grads-rank{r}.pt") for r in range(2)]
    g_one = _RecordingAdamW.record
    rows = [json.loads(x) for x in (tmp_path / "one" / "metrics.jsonl").read_text().splitlines()]
    norm = next(r["grad_norm"] for r in rows if r["kind"] == "train")
    rel = 2 * 4 * 24 * 40 * EPS32
    for a, b in zip(g_ddp[0][0], g_ddp[1][0]):
        assert torch.equal(a, b)  # all-reduced once: every rank holds the same gradient
    assert max(float((a - b).abs().max()) for a, b in zip(g_ddp[0][0], g_one[0])) <= rel * norm


def test_out_of_memory_error_suggests_mini_batch_size_where_it_applies():
    from hardneg.train.speed import out_of_memory

    def message(**kw) -> str:
        s = TrainSettings.from_dict({**preset(kw.pop("method", "simcse")).settings, **kw})
        return str(out_of_memory(torch.OutOfMemoryError("CUDA out of memory."), s, torch.device("cpu")))

    assert "set mini_batch_size" in message()
    assert "smaller mini_batch_size (now 32)" in message(mini_batch_size=32)
    assert "mini_batch_size" not in message(method="hicl_simcse")  # refused for HiCL: not suggested
