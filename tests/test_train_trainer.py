"""The trainer end to end on a tiny model: data joining, resume, NaN stop, export, DDP (gloo)."""

from __future__ import annotations

import json
import math
import os
import socket
from pathlib import Path
from typing import ClassVar

import numpy as np
import polars as pl
import pytest
import torch

from hardneg.shards import write_shard
from hardneg.train.data import load_training_data
from hardneg.train.presets import build_settings
from hardneg.train.settings import TrainSettings
from hardneg.train.trainer import IncompatibleCheckpoint, TrainingDiverged, train

N_ROWS = 24


@pytest.fixture(scope="module")
def wiki_lines(mirror_dir) -> list[str]:
    path = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
    with path.open(encoding="utf-8") as fh:
        return [next(fh).strip() for _ in range(N_ROWS)]


@pytest.fixture(scope="module")
def shards(tmp_path_factory, wiki_lines) -> dict:
    """Two corpus shards + SAN / negation / back-translation shards in the contract layout."""
    d = tmp_path_factory.mktemp("train-shards")
    half = N_ROWS // 2
    out: dict = {"corpus": [], "san": [], "negation": [], "paraphrase": []}
    for s, (lo, hi) in enumerate([(0, half), (half, N_ROWS)]):
        ids = list(range(lo, hi))
        text = wiki_lines[lo:hi]
        corpus = pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "text": text})
        out["corpus"].append(str(write_shard(corpus, d / f"corpus-{s}.parquet")))
        # SAN drops id 3 (null, with a reason), as an augmenter does
        san = [None if i == 3 else " ".join(t.split()[::-1]) for i, t in zip(ids, text)]
        out["san"].append(str(write_shard(corpus.with_columns(
            pl.Series("san", san, dtype=pl.String),
            status=pl.Series(["dropped" if v is None else "ok" for v in san]),
            reason=pl.Series([("too short" if v is None else None) for v in san], dtype=pl.String),
            augmenter=pl.lit("san")), d / f"san-{s}.parquet")))
        out["negation"].append(str(write_shard(corpus.with_columns(
            negation=pl.Series(["Not " + t for t in text]), rule=pl.lit("prefix"),
            status=pl.lit("ok"), reason=pl.lit(None, dtype=pl.String), augmenter=pl.lit("negation")),
            d / f"neg-{s}.parquet")))
        out["paraphrase"].append(str(write_shard(corpus.with_columns(
            paraphrase=pl.Series([t.lower() + " indeed" for t in text]),
            status=pl.lit("ok"), reason=pl.lit(None, dtype=pl.String), augmenter=pl.lit("backtranslation")),
            d / f"bt-{s}.parquet")))
    return out


def aug(shards: dict) -> dict:
    return {k: shards[k] for k in ("san", "negation", "paraphrase")}


def settings(tiny_mlm_dir, method="simcse", **kw) -> TrainSettings:
    base = {"batch_size": 4, "max_steps": 4, "eval_every": 100, "checkpoint_every": 2, "log_every": 1,
            "show_progress": False, "lr": 1e-3, "max_length": 24}
    base.update(kw)
    return build_settings(method, str(tiny_mlm_dir), seed=7, overrides=base)


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


# ---------------------------------------------------------------------------------------------
def test_join_counts_and_post_processing(shards):
    data = load_training_data(shards["corpus"], aug(shards), ["san"])
    assert data.counts == {"rows_in": N_ROWS, "failed_san": 1, "rows_if_failed_dropped": N_ROWS - 1,
                           "dropped_no_san": 1, "rows_used": N_ROWS - 1}
    assert 3 not in data.frame["id"].to_list()
    data = load_training_data(shards["corpus"], aug(shards), ["san", "negation"], post_process=True)
    assert data.counts["san_replaced_by_negation"] == 1 and data.counts["rows_used"] == N_ROWS
    row = data.frame.filter(pl.col("id") == 3)
    assert row["san"][0] == row["negation"][0]


def test_missing_column_names_column_and_rule(shards):
    with pytest.raises(ValueError, match=r"column 'san' is missing.*rules/san\.smk"):
        load_training_data(shards["corpus"], {"san": shards["negation"]}, ["san"])
    with pytest.raises(ValueError, match=r"needs column 'paraphrase'.*back-translation"):
        load_training_data(shards["corpus"], {}, ["paraphrase"])


def test_empty_shards_and_foreign_ids(tmp_path, shards):
    empty = write_shard(pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)}),
                        tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match="all empty"):
        load_training_data([empty], {}, [])
    with pytest.raises(ValueError, match="not in corpus shard"):
        load_training_data([shards["corpus"][0]], {"san": [shards["san"][1]]}, ["san"])


def test_train_export_and_metrics(tmp_path, tiny_mlm_dir, shards, senteval_dir):
    s = settings(tiny_mlm_dir, "simcse", eval_every=2)
    summary = train(s, shards["corpus"], tmp_path / "run", senteval_dir=senteval_dir)
    model = tmp_path / "run" / "model"
    assert summary["global_batch"] == 4 and summary["steps"] == 4
    assert math.isfinite(summary["stsb_dev"]) and summary["best_step"] in (0, 2, 4) or summary["best_step"] in (2, 4)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["kind"] == "train"] == [1, 2, 3, 4]
    assert [r["step"] for r in rows if r["kind"] == "eval"] == [0, 2, 4]
    assert all(r["global_batch"] == 4 for r in rows if r["kind"] == "train")
    assert (tmp_path / "run" / "curve.png").read_bytes()[:4] == b"\x89PNG"
    # sentence-transformers folder: CLS pooling before the (training-only) MLP, which is absent
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode"] == "cls"
    assert not any(k.startswith("mlp") for k in weights(model))
    assert "STS-B dev" in (model / "README.md").read_text()
    # evaluation's loader and sentence-transformers give the same vectors from the folder
    from sentence_transformers import SentenceTransformer

    from hardneg.encoders import load_encoder

    sents = ["a cat sat on the mat .", "stocks fell sharply on monday ."]
    ours = load_encoder(str(model), device="cpu").encode(sents)
    theirs = SentenceTransformer(str(model), device="cpu").encode(sents)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_resume_after_kill_gives_same_weights(tmp_path, tiny_mlm_dir, shards):
    s = settings(tiny_mlm_dir, "simcse_san", max_steps=6, checkpoint_every=2)
    train(s, shards["corpus"], tmp_path / "full", augment_shards=aug(shards))
    # killed after 3 steps: the checkpoint at step 2 survives, step 3 is lost and recomputed
    out = train(s, shards["corpus"], tmp_path / "killed", augment_shards=aug(shards), halt_after_steps=3)
    assert out == {"halted_at": 3}
    assert not (tmp_path / "killed" / "model").exists()
    summary = train(s, shards["corpus"], tmp_path / "killed", augment_shards=aug(shards))
    assert summary["steps"] == 6
    a, b = weights(tmp_path / "full" / "model"), weights(tmp_path / "killed" / "model")
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)
    la = (tmp_path / "full" / "metrics.jsonl").read_text()
    lb = (tmp_path / "killed" / "metrics.jsonl").read_text()
    strip = lambda t: [{k: v for k, v in json.loads(x).items() if k != "sent_per_s"} for x in t.splitlines()]
    assert strip(la) == strip(lb)


def test_resume_state_is_removed_after_export_unless_kept(tmp_path, tiny_mlm_dir, shards):
    """A finished job keeps model/metrics/summary and drops last.pt/best.pt (unless asked to keep them);
    a halted job keeps them, since it must resume."""
    s = settings(tiny_mlm_dir, max_steps=4)
    train(s, shards["corpus"], tmp_path / "halted", halt_after_steps=2)
    assert (next((tmp_path / "halted").glob("work-*")) / "last.pt").exists()
    train(s, shards["corpus"], tmp_path / "halted")  # resumes, then cleans up
    assert not list((tmp_path / "halted").glob("work-*"))
    for name in ("model", "metrics.jsonl", "summary.json", "curve.png"):
        assert (tmp_path / "halted" / name).exists(), name
    train(s, shards["corpus"], tmp_path / "kept", keep_checkpoints=True)
    kept = sorted(p.name for p in next((tmp_path / "kept").glob("work-*")).iterdir())
    assert "last.pt" in kept and "rng-rank0.pt" in kept, kept


def test_incompatible_checkpoint_is_refused(tmp_path, tiny_mlm_dir, shards):
    work = tmp_path / "work"
    train(settings(tiny_mlm_dir, max_steps=4), shards["corpus"], tmp_path / "a", work_dir=work, halt_after_steps=2)
    with pytest.raises(IncompatibleCheckpoint, match=r"lr: 0\.001 -> 0\.002"):
        train(settings(tiny_mlm_dir, max_steps=4, lr=2e-3), shards["corpus"], tmp_path / "a", work_dir=work)


def test_nan_loss_stops_naming_the_step(tmp_path, tiny_mlm_dir, shards):
    """A model whose weights hold a NaN (a corrupted checkpoint) must stop at step 1, clearly."""
    from transformers import AutoModel, AutoTokenizer

    bad = AutoModel.from_pretrained(tiny_mlm_dir)
    with torch.no_grad():
        bad.encoder.layer[0].output.dense.weight[0, 0] = float("nan")
    bad.save_pretrained(tmp_path / "bad")
    AutoTokenizer.from_pretrained(tiny_mlm_dir).save_pretrained(tmp_path / "bad")
    s = settings(tmp_path / "bad", max_steps=3)
    with pytest.raises(TrainingDiverged, match=r"non-finite loss at step 1 \(epoch 0, batch 0\)"):
        train(s, shards["corpus"], tmp_path / "nan")


@pytest.mark.parametrize("method", ["sncse_san", "osscse", "rankcse_san", "rlrd_san"])
def test_every_hard_negative_method_runs(tmp_path, tiny_mlm_dir, shards, method):
    # ranking methods: the tiny model as its own teacher, explicitly allowed (paper teachers are hub ids)
    teacher = {"teachers": None, "allow_untrained_teacher": True} if method in ("rankcse_san", "rlrd_san") else {}
    s = settings(tiny_mlm_dir, method, max_steps=2, max_length=40, **teacher)
    summary = train(s, shards["corpus"], tmp_path / method, augment_shards=aug(shards))
    rows = [json.loads(x) for x in (tmp_path / method / "metrics.jsonl").read_text().splitlines()]
    parts = set(rows[-1])
    expect = {"sncse_san": {"hince", "bml"}, "osscse": {"infonce", "margin", "recall"},
              "rankcse_san": {"hince", "listmle_san", "consistency", "distill_listmle"},
              "rlrd_san": {"hince", "listmle_san", "bml", "distill_listmle"}}[method]
    assert expect <= parts
    assert summary["data"]["rows_used"] == (N_ROWS if method != "sncse_san" else N_ROWS - 1)
    model = tmp_path / method / "model"
    if method in ("sncse_san", "osscse"):
        hn = json.loads((model / "hardneg_transformer_config.json").read_text())
        assert hn == {"template": "sncse1", "max_seq_length": 128, "output_hidden_states": False}
        assert json.loads((model / "1_Pooling" / "config.json").read_text())["pooler"] == "mask"


# ----- DDP: 2 CPU processes (gloo) ------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _RecordingAdamW(torch.optim.AdamW):
    """AdamW that keeps every step's gradients (after DDP's all-reduce) so a test can compare
    them; the update itself is AdamW's, unchanged."""

    record: ClassVar[list[list[torch.Tensor]]] = []

    def step(self, closure=None):
        type(self).record.append([p.grad.detach().clone() for g in self.param_groups for p in g["params"]])
        return super().step(closure)


def _ddp_worker(rank: int, world: int, port: int, s: TrainSettings, corpus: list, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    torch.optim.AdamW = _RecordingAdamW  # this spawned process only
    import torch.distributed as dist

    try:
        train(s, corpus, out)
        torch.save(_RecordingAdamW.record, Path(out) / f"grads-rank{rank}.pt")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


EPS32 = torch.finfo(torch.float32).eps


def _trained_names(s: TrainSettings) -> list[str]:
    """Names of the trainable parameters, in the order the trainer hands them to the optimizer
    (backbone names as in the exported model.safetensors)."""
    from hardneg.train.model import ContrastiveEncoder

    enc = ContrastiveEncoder.from_pretrained(s.init_model, s.pooler, s.max_length, s.mlp_only_train, s.dropout)
    return [n.removeprefix("backbone.") for n, p in enc.named_parameters() if p.requires_grad]


def test_ddp_two_processes_matches_single_process_global_batch(tmp_path, tiny_mlm_dir, shards, monkeypatch):
    """Without dropout, 2 ranks x batch 2 must equal 1 process x batch 4: same global batch,
    all-gathered negatives, gradients kept for the local slice.

    DDP makes the loss and the gradients equal up to float32 summation order (gloo's all-reduce,
    batch 2 vs 4 matmuls); Adam then divides by |g|, so a gradient component within rounding of
    0 may take a different lr-sized step on another CPU. So: compare loss and gradients with a
    float32 bound, and the weights with a bound that follows from those through Adam's update.
    """
    import torch.multiprocessing as mp

    s = settings(tiny_mlm_dir, "simcse", batch_size=2, dropout=0.0, max_steps=2)
    mp.spawn(_ddp_worker, args=(2, _free_port(), s, shards["corpus"], str(tmp_path / "ddp")), nprocs=2, join=True)
    monkeypatch.setattr(torch.optim, "AdamW", _RecordingAdamW)
    monkeypatch.setattr(_RecordingAdamW, "record", [])
    single = settings(tiny_mlm_dir, "simcse", batch_size=4, dropout=0.0, max_steps=2)
    train(single, shards["corpus"], tmp_path / "single")
    summary = json.loads((tmp_path / "ddp" / "summary.json").read_text())
    assert summary["global_batch"] == 4 and summary["world_size"] == 2 and summary["per_device_batch"] == 2

    def train_rows(run: str) -> list[dict]:
        lines = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        return [r for r in map(json.loads, lines) if r["kind"] == "train"]

    ddp_rows, one_rows = train_rows("ddp"), train_rows("single")
    g_ddp = [torch.load(tmp_path / "ddp" / f"grads-rank{r}.pt") for r in range(2)]
    g_one = _RecordingAdamW.record
    assert len(g_ddp[0]) == len(g_ddp[1]) == len(g_one) == 2
    # After the all-reduce every rank holds the same averaged gradient, bit for bit.
    for a, b in zip(g_ddp[0][0] + g_ddp[0][1], g_ddp[1][0] + g_ddp[1][1]):
        assert torch.equal(a, b)

    # Float32 bound for one forward+backward: sums of at most K = 4 x 24 = 96 terms (tokens in
    # the global batch; hidden 32, intermediate 64 are shorter), each carrying relative error
    # <= K*eps (Higham's gamma_K), along a chain of at most DEPTH = 36 such operations (2 layers
    # x 7 matmul/softmax/LayerNorm, embeddings, pooler, loss; forward and backward).
    rel = 96 * 36 * EPS32  # ~4e-4: normwise relative error of the loss terms and gradients
    # Step 1 (same initial weights): the logged loss (on the gathered batch) and the gradients.
    # Logits are cosines / temperature, so their error is at most rel / temperature.
    assert abs(ddp_rows[0]["loss"] - one_rows[0]["loss"]) <= rel / s.temperature
    assert ddp_rows[0]["grad_norm"] == pytest.approx(one_rows[0]["grad_norm"], rel=rel)
    g1_norm = one_rows[0]["grad_norm"]  # normwise: errors scale with the whole gradient
    for i, (a, b) in enumerate(zip(g_ddp[0][0], g_one[0])):
        err = float((a - b).abs().max())
        assert err <= rel * g1_norm, f"step-1 gradient of parameter {i} {tuple(b.shape)}: {err:.3g}"

    # Weights after 2 AdamW steps (lr, then lr/2). Adam's first steps move each weight by
    # lr_t * g/(|g| + eps_adam) (bias-corrected; |step| <= ~lr_t): a gradient error dg changes
    # that by at most 2*dg/|g|, and by at most 2 (a sign flip) when |g| is within rounding of 0.
    # dg is bounded per step by rel * (that step's gradient norm); the step-2 gradient comes from
    # the step-1 weights, which agree to that same bound except where step 1 was sign-ambiguous.
    # Plus rounding of the update itself (a few eps * |w|).
    names = list(weights(tmp_path / "single" / "model"))
    w_ddp, w_one = weights(tmp_path / "ddp" / "model"), weights(tmp_path / "single" / "model")
    lrs = (s.lr, s.lr / 2)
    trained = _trained_names(single)
    assert len(trained) == len(g_one[0])
    params = {n: i for i, n in enumerate(trained)}
    for name in names:
        if name not in params:  # not trained (e.g. the unused BERT pooler): identical
            assert torch.equal(w_ddp[name], w_one[name]), name
            continue
        i = params[name]
        tol = 8 * EPS32 * w_one[name].abs()
        for t, lr_t in enumerate(lrs):
            g = g_one[t][i].abs()
            dg = rel * one_rows[t]["grad_norm"]
            tol = tol + lr_t * torch.clamp(2 * dg / g.clamp_min(1e-30), max=2.0)
        diff = (w_ddp[name] - w_one[name]).abs()
        assert bool((diff <= tol).all()), f"{name}: {float((diff - tol).max()):.3g} over the bound"


def test_a_resumed_run_keeps_its_fallback_counts(tmp_path, tiny_mlm_dir, shards):
    """summary.json's fallback counters count every step once, across a kill and a re-run."""
    s = settings(tiny_mlm_dir, "hicl_simcse", max_steps=4, checkpoint_every=2,
                 method_settings={"hicl": {"segment_length": 8}})
    full = train(s, shards["corpus"], tmp_path / "full", keep_checkpoints=True)
    assert full["fallbacks"]["hicl_single_segment"] > 0  # the counter this test follows moves
    train(s, shards["corpus"], tmp_path / "killed", halt_after_steps=3)
    resumed = train(s, shards["corpus"], tmp_path / "killed")
    assert resumed["fallbacks"] == full["fallbacks"]
    again = train(s, shards["corpus"], tmp_path / "full")  # a finished run re-run: resumes at its end
    assert again["fallbacks"] == full["fallbacks"]
