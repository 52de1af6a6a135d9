"""HNCSE, HiCL, SynCSE: each term against values derived by hand on tiny tensors,
the counted fallbacks, the segmenting rule, the pool index, and a short run of every preset.

Expected values are the papers' formulas written out in numpy (float64), independent of the
modules. Tolerance: float64 eps (2.2e-16) x |value| (< 100) x ops (< 100) < 1e-12.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
import torch

from hardneg.train.fallbacks import FallbackCounts
from hardneg.train.objectives import hncse, syncse
from hardneg.train.objectives.hicl import HiCLLoss, aggregate, local_contrast
from hardneg.train.segments import segment, slice_lengths

TOL = 1e-12
TAU = 0.05


def t(x, grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), dtype=torch.float64, requires_grad=grad)


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def ce(logits, target):
    m = logits.max()
    return float(-(logits[target] - m - np.log(np.exp(logits - m).sum())))


# ----- HNCSE-PM ------------------------------------------------------------------------------
A2 = [[1.0, 0.0], [0.0, 1.0]]
P2 = [[0.6, 0.8], [0.8, 0.6]]  # each anchor's hardest negative (0.8) beats its positive (0.6)


def test_pm_mixes_where_the_hardest_negative_wins_and_loss_matches_eq3():
    a, p = np.array(A2), np.array(P2)
    # Eq. 2 by hand: s_p = 0.6, s_n = 0.8 for both rows; p~_i = (0.6 p_i + 0.8 p_other) / 1.4
    want = np.array([(0.6 * p[0] + 0.8 * p[1]) / 1.4, (0.6 * p[1] + 0.8 * p[0]) / 1.4])
    got = hncse.mix_positives(t(a), t(p)).detach().numpy()
    assert np.abs(got - want).max() < TOL
    cos = unit(a) @ unit(want).T
    loss = np.mean([ce(cos[i] / TAU, i) for i in range(2)])
    assert abs(float(hncse.PositiveMixing(TAU)(t(a), t(p))) - loss) < TOL


def test_pm_near_miss_case_and_single_variant():
    # anchor 0: s_p = 0.95 beats s_n = 0.9 by a relative gap 0.0526 <= 0.1: mixed (not when single)
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = np.array([[0.95, math.sqrt(1 - 0.95**2)], [0.9, -math.sqrt(1 - 0.81)]])
    s_p, s_n = 0.95, 0.9
    got = hncse.mix_positives(t(a), t(p), margin=0.1).detach().numpy()
    assert np.abs(got[0] - (s_p * p[0] + s_n * p[1]) / (s_p + s_n)).max() < TOL
    single = hncse.mix_positives(t(a), t(p), margin=0.1, single=True).detach().numpy()
    assert np.abs(single[0] - p[0]).max() < TOL
    # a clear win (gap > margin) keeps the positive
    kept = hncse.mix_positives(t(a), t(p), margin=0.01).detach().numpy()
    assert np.abs(kept[0] - p[0]).max() < TOL


def test_pm_degenerate_weights_fall_back_to_the_positive_and_are_counted():
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = np.array([[-0.6, 0.8], [-0.2, math.sqrt(1 - 0.04)]])  # row 0: s_p -0.6, s_n -0.2: sum < 0
    counts = FallbackCounts(global_keys=hncse.PM_FALLBACKS)
    got = hncse.mix_positives(t(a), t(p), counts=counts).detach().numpy()
    assert np.abs(got[0] - p[0]).max() < TOL
    assert counts.as_dict() == {"hncse_pm_degenerate_weights": 1}


# ----- HNCSE-HNM -----------------------------------------------------------------------------
A3 = unit([[1.0, 0.2], [0.1, 1.0], [-1.0, 0.3]])
P3 = unit([[0.9, 0.4], [0.3, 1.0], [-0.8, 0.5]])


def hnm_expected(a, p, alpha):
    """K = 2 of 3: the single pair (hardest, second) -> every mix of a row is the same vector."""
    sims = a @ p.T
    out = []
    for i in range(3):
        negs = sorted((j for j in range(3) if j != i), key=lambda j: -sims[i, j])
        u, v = negs
        al = (1 + sims[i, u]) / (2 + sims[i, u] + sims[i, v]) if alpha is None else alpha
        h = unit(al * p[u] + (1 - al) * p[v])
        logits = np.concatenate([sims[i], np.full(5, a[i] @ h)]) / TAU
        out.append(ce(logits, i))
    return float(np.mean(out))


@pytest.mark.parametrize("alpha", [None, 0.5, 1.0])
def test_hnm_loss_matches_eq7_eq8_by_hand(alpha):
    loss = hncse.HardNegativeMixing(TAU, top_k=2, n_mixes=5, alpha=alpha)(t(A3), t(P3))
    assert abs(float(loss) - hnm_expected(A3, P3, alpha)) < TOL


def test_hnm_k_larger_than_batch_is_clipped_and_counted():
    counts = FallbackCounts(global_keys=hncse.HNM_FALLBACKS)
    loss = hncse.HardNegativeMixing(TAU, top_k=10, n_mixes=5, alpha=None, counts=counts)(t(A3), t(P3))
    assert abs(float(loss) - hnm_expected(A3, P3, None)) < TOL  # K 10 -> the 2 there are
    assert counts.as_dict()["hncse_hnm_topk_clipped"] == 3
    # batch of 2: one candidate, the mix is that negative itself
    counts = FallbackCounts(global_keys=hncse.HNM_FALLBACKS)
    a, p = A3[:2], P3[:2]
    loss = hncse.HardNegativeMixing(TAU, top_k=10, n_mixes=3, counts=counts)(t(a), t(p))
    sims = a @ p.T
    want = np.mean([ce(np.concatenate([sims[i], np.full(3, sims[i, 1 - i])]) / TAU, i) for i in range(2)])
    assert abs(float(loss) - want) < TOL
    assert counts.as_dict()["hncse_hnm_single_candidate"] == 2


def test_hnm_pairs_are_distinct_top_k_members():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(6, 4, dtype=torch.float64)
    p = torch.randn(6, 4, dtype=torch.float64)
    mixes = hncse.hard_negative_mixes(a, p, top_k=3, n_mixes=50, alpha=0.5, generator=gen)
    sims = (torch.nn.functional.normalize(a, dim=1) @ torch.nn.functional.normalize(p, dim=1).T).fill_diagonal_(-9)
    top = sims.topk(3, dim=1).indices
    for i in range(6):
        cands = {tuple(torch.nn.functional.normalize(0.5 * p[u] + 0.5 * p[v], dim=0).round(decimals=9).tolist())
                 for u in top[i] for v in top[i] if u < v}
        got = {tuple(m.round(decimals=9).tolist()) for m in mixes[i]}
        assert got <= cands


# ----- HiCL ----------------------------------------------------------------------------------
def test_queue_rule_segment_count():
    for n in range(1, 130):
        lens = slice_lengths(n, 32)
        assert len(lens) == 1 + (n - 1) // 32 and sum(lens) == n
        assert all(x == 32 for x in lens[:-1]) and 1 <= lens[-1] <= 32
    assert slice_lengths(0, 32) == [0]


def test_segments_concatenate_to_the_sequence_and_carry_the_prompt(bert_tokenizer):
    from hardneg.train.model import PromptTokenizer

    pt = PromptTokenizer(bert_tokenizer, max_length=32)
    long = " ".join(["word"] * 40 + ["tail"] * 30)  # 70 sentence tokens
    s = segment(pt, [long, "short one", ""], None, seg_len=32, max_tokens=512)
    body = bert_tokenizer(long, add_special_tokens=False)["input_ids"]
    assert s.owner == [0, 0, 0, 1, 2] and s.lengths == [32, 32, 6, 2, 0]
    cls, sep = bert_tokenizer.cls_token_id, bert_tokenizer.sep_token_id
    assert all(r[0] == cls and r[-1] == sep for r in s.ids)
    assert [x for r in s.ids[:3] for x in r[1:-1]] == body  # not truncated to max_length 32
    assert s.counts == {"hicl_single_segment": 1, "hicl_empty_sequence": 1, "hicl_truncated": 0}
    tr = segment(pt, [long], None, seg_len=32, max_tokens=50)
    assert tr.lengths == [32, 18] and tr.counts["hicl_truncated"] == 1
    pre, suf = pt._template_ids("sncse1")
    wrapped = segment(pt, [long], "sncse1", seg_len=32, max_tokens=512)
    for r, n in zip(wrapped.ids, [32, 32, 6]):
        assert r[1 : 1 + len(pre)] == pre and r[-1 - len(suf) : -1] == suf and len(r) == 2 + len(pre) + len(suf) + n


def test_segment_longer_than_the_model_is_a_setting_error(tiny_mlm_dir):
    from hardneg.train.hicl_views import hicl_views
    from hardneg.train.model import ContrastiveEncoder

    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), "avg", 32, mlp=False)  # 128 positions
    with pytest.raises(ValueError, match="'method_settings.hicl.segment_length' \\(200\\)"):
        long = [" ".join(["word"] * 300)]
        hicl_views(enc, [("anchor", long, None), ("positive", long, None)], 200, 512)


def test_aggregate_is_length_weighted():
    v = t([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [5.0, 5.0]])
    got = aggregate(v, torch.tensor([0, 0, 1, 2]), torch.tensor([32, 8, 3, 0]), 3).numpy()
    want = np.array([[32 / 40, 8 / 40], [2.0, 2.0], [5.0, 5.0]])
    assert np.abs(got - want).max() < TOL


def test_local_loss_masks_same_sequence_segments_eq2():
    sa = unit([[1.0, 0.1], [0.5, 1.0], [-1.0, 0.4]])
    sp = unit([[0.9, 0.3], [0.4, 1.0], [-0.7, 0.6]])
    owner = [0, 0, 1]
    sims = sa @ sp.T / TAU
    want = np.mean([ce(np.array([sims[i, j] for j in range(3) if j == i or owner[j] != owner[i]]),
                       [j for j in range(3) if j == i or owner[j] != owner[i]].index(i)) for i in range(3)])
    got = local_contrast(t(sa), t(sp), torch.tensor(owner), TAU)
    assert abs(float(got) - want) < TOL
    ga, gp = unit([[1.0, 0.0], [0.2, 1.0]]), unit([[0.8, 0.3], [0.1, 1.0]])
    g = ga @ gp.T / TAU
    glob = np.mean([ce(g[i], i) for i in range(2)])
    total, _, gl = HiCLLoss(0.15, TAU)(t(ga), t(gp), t(sa), t(sp), torch.tensor(owner))
    assert abs(float(total) - (0.15 * want + 0.85 * glob)) < TOL and abs(float(gl) - glob) < TOL


# ----- SynCSE --------------------------------------------------------------------------------
SA = unit([[1.0, 0.2], [0.3, 1.0]])
SP = unit([[0.9, 0.5], [0.2, 1.0]])
SN = unit([[[0.7, 0.7], [1.0, -0.1]], [[0.6, 0.8], [-0.2, 1.0]]])  # [N, k, d]


@pytest.mark.parametrize("in_batch", [True, False])
@pytest.mark.parametrize("weights", ["alignment", "uniform"])
def test_weighted_ntxent_eq7(in_batch, weights):
    rows = []
    for i in range(2):
        pos = SA[i] @ SP.T if in_batch else np.array([SA[i] @ SP[i]])
        neg = SN[i] @ SA[i]
        rows.append(ce(np.concatenate([pos, neg]) / TAU, i if in_batch else 0))
    c = np.maximum(0, (SA * SP).sum(1))
    w = c / c.mean() if weights == "alignment" else np.ones(2)
    want = float(np.mean(w * np.array(rows)))
    got = syncse.WeightedNTXent(TAU, weights, in_batch)(t(SA), t(SP), t(SN))
    assert abs(float(got) - want) < TOL


def test_syncse_weights_all_nonpositive_fall_back_to_uniform():
    counts = FallbackCounts(global_keys=syncse.FALLBACKS)
    w = syncse.confidence_weights(t(SA), t(-SP), "alignment", counts)
    assert torch.equal(w, torch.ones(2, dtype=torch.float64))
    assert counts.as_dict() == {"syncse_degenerate_weights": 1}


class FakeEncoder(torch.nn.Module):
    """Maps each text to a fixed vector (the index only needs __call__/eval/train/device)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__()
        self.table = table
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.calls = 0

    @property
    def device(self):
        return torch.device("cpu")

    def forward(self, texts, template=None, use_mlp=True):
        self.calls += 1
        return torch.tensor([self.table[x] for x in texts], dtype=torch.float32)


POOL = {"a": [1.0, 0.0], "b": [0.9, 0.1], "c": [0.8, 0.3], "d": [0.0, 1.0], "e": [-1.0, 0.0]}


def test_index_samples_above_delta_excluding_the_anchor_text():
    from hardneg.train.negindex import NegativeIndex

    texts = ["a", "b", "c", "d", "e", "a"]  # row 5 duplicates row 0's text
    idx = NegativeIndex(texts, k=2, delta=0.5, refresh_every=10, seed=1)
    enc = FakeEncoder(POOL)
    got = idx.negatives(enc, np.array([0, 3]), step=0)
    assert sorted(got[:2]) == ["b", "c"]  # cos(a, b) .99, cos(a, c) .94 > 0.5; never "a"
    assert idx.counts.as_dict()["syncse_below_delta"] == 1  # "d": none above 0.5 (best: c, 0.35)
    assert got[2:] == ["c", "b"]  # below delta: the 2 most similar to d
    assert idx.negatives(enc, np.array([0, 3]), step=0) == got  # same (seed, step): same draw
    n_calls = enc.calls
    idx.negatives(enc, np.array([1]), step=9)
    assert enc.calls == n_calls  # no refresh before step 10
    idx.negatives(enc, np.array([1]), step=10)
    assert enc.calls == n_calls + 1


def test_index_pool_smaller_than_k_lowers_k_and_counts():
    from hardneg.train.negindex import NegativeIndex

    idx = NegativeIndex(["a", "b", "c"], k=5, delta=0.0, refresh_every=10, seed=1)
    got = idx.negatives(FakeEncoder(POOL), np.array([0, 1]), step=0)
    assert idx.k == 2 and sorted(got[:2]) == ["b", "c"]
    assert idx.counts.as_dict()["syncse_pool_too_small"] == 2
    with pytest.raises(ValueError, match="method_settings.syncse.pool_size"):
        NegativeIndex(["a", "a"], k=1, delta=0.0, refresh_every=1, seed=1)


# ----- settings and a short run of every preset ----------------------------------------------
def test_settings_errors_name_the_setting():
    from hardneg.train.presets import build_settings

    with pytest.raises(ValueError, match="'method_settings.hncse.mode'"):
        build_settings("simcse", "x", 1, overrides={"method_settings": {"hncse": {"mode": "mix"}}})
    with pytest.raises(ValueError, match="'method_settings.hicl.enabled'.*cannot be combined"):
        build_settings("hncse_pm", "x", 1, overrides={"method_settings": {"hicl": {"enabled": True}}})
    with pytest.raises(ValueError, match="'method_settings.hncse.mix_alpha'"):
        build_settings("hncse_hnm", "x", 1, overrides={"method_settings": {"hncse": {"mix_alpha": 2}}})
    with pytest.raises(ValueError, match="'method_settings.syncse.pool_size'"):
        build_settings("syncse", "x", 1, overrides={"method_settings": {"syncse": {"pool_size": 1}}})
    with pytest.raises(ValueError, match=r"'method_settings.hicl.enabled': must be true or false"):
        build_settings("simcse", "x", 1, overrides={"method_settings": {"hicl": {"enabled": 1}}})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, mirror_dir):
    from hardneg.shards import write_shard

    path = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
    with path.open(encoding="utf-8") as fh:
        text = [next(fh).strip() for _ in range(16)]
    text[0] = " ".join([text[0]] * 6)  # one long sentence: several HiCL segments
    text[1] = "Short one."  # shorter than one segment
    d = tmp_path_factory.mktemp("contrast_terms")
    frame = pl.DataFrame({"id": pl.Series(range(16), dtype=pl.Int64), "text": text})
    c = str(write_shard(frame, d / "corpus.parquet"))
    n = str(write_shard(frame.with_columns(negation=pl.Series(["Not " + x for x in text]), rule=pl.lit("prefix"),
                                           status=pl.lit("ok"), reason=pl.lit(None, dtype=pl.String),
                                           augmenter=pl.lit("negation")), d / "neg.parquet"))
    return {"corpus": [c], "negation": [n]}


@pytest.mark.parametrize("method", ["hncse_pm", "hncse_hnm", "hicl_simcse", "hicl_sncse", "syncse"])
def test_every_replacement_preset_trains_and_reports_fallbacks(tmp_path, tiny_mlm_dir, corpus, method):
    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import train

    over = {"batch_size": 4, "max_steps": 2, "eval_every": 100, "checkpoint_every": 100, "log_every": 1,
            "show_progress": False, "lr": 1e-3, "max_length": 24,
            # knobs for every preset: an entry's values switch no method on (enabled stays the preset's)
            "method_settings": {"hicl": {"segment_length": 8}, "syncse": {"refresh_every": 1, "pool_size": 12}}}
    s = build_settings(method, str(tiny_mlm_dir), seed=3, overrides=over)
    summary = train(s, corpus["corpus"], tmp_path / method, augment_shards={"negation": corpus["negation"]})
    last = json.loads((tmp_path / method / "metrics.jsonl").read_text().splitlines()[-1])
    first = {"hncse_pm": "hncse_pm", "hncse_hnm": "hncse_hnm", "hicl_simcse": "hicl", "hicl_sncse": "hicl",
             "syncse": "syncse"}[method]
    assert math.isfinite(last[first]) and "infonce" not in last
    fb = summary["fallbacks"]
    if method.startswith("hicl"):
        assert {"hicl_local", "hicl_global"} <= set(last)
        assert fb["hicl_empty_sequence"] == 0 and fb["hicl_single_segment"] > 0
    if method == "hicl_sncse":
        assert "bml" in last
    if method == "hncse_hnm":
        assert fb["hncse_hnm_topk_clipped"] == 2 * 4  # K 10 > batch 4: every row, both steps
    if method == "syncse":
        assert fb["syncse_k_used"] == 4 and set(fb) >= {"syncse_below_delta", "syncse_pool_too_small"}


def _ddp_worker(rank, world, port, s, corpus, out):
    import os

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    import torch.distributed as dist

    from hardneg.train.trainer import train

    try:
        train(s, corpus, out)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


@pytest.mark.integration  # ~40 s on 2 cores (two spawned processes)
def test_hicl_ddp_two_processes_matches_single_process(tmp_path, tiny_mlm_dir, corpus):
    """HiCL's segments differ in number per rank: the padded gather must still give the
    single-process global batch (no dropout: 2 ranks x 2 == 1 x 4): the same step-1 losses (before
    any update; weights are compared by test_train_trainer's DDP test) and summed fallbacks.
    Tolerance: float32 eps 1.2e-7 x loss ~10 x ~100 summed terms ~ 1e-4 absolute."""
    import socket

    import torch.multiprocessing as mp

    from hardneg.train.presets import build_settings
    from hardneg.train.trainer import train

    def s(bs):
        return build_settings("hicl_simcse", str(tiny_mlm_dir), seed=3, overrides={
            "batch_size": bs, "max_steps": 1, "eval_every": 100, "checkpoint_every": 100, "show_progress": False,
            "log_every": 1, "lr": 1e-3, "dropout": 0.0, "method_settings": {"hicl": {"segment_length": 8}}})

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(_ddp_worker, args=(2, port, s(2), corpus["corpus"], str(tmp_path / "ddp")), nprocs=2, join=True)
    single = train(s(4), corpus["corpus"], tmp_path / "single")
    ddp = json.loads((tmp_path / "ddp" / "summary.json").read_text())
    assert ddp["fallbacks"] == single["fallbacks"]
    a = json.loads((tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()[0])
    b = json.loads((tmp_path / "single" / "metrics.jsonl").read_text().splitlines()[0])
    assert a["step"] == b["step"] == 1
    for key in ("hicl", "hicl_local", "hicl_global"):
        assert abs(a[key] - b[key]) < 1e-4, (key, a[key], b[key])


def test_syncse_layer_wise_learning_rates(tiny_mlm_dir):
    # SynCSE "Training optimizations": a lower rate for the pretrained encoder, a higher one for the projection
    from hardneg.train.methods.objective import prepare_encoder as install_projection
    from hardneg.train.model import ContrastiveEncoder
    from hardneg.train.presets import build_settings

    s = build_settings("syncse", str(tiny_mlm_dir), 1)
    assert s.head_lr is not None and s.head_lr > s.lr
    enc = ContrastiveEncoder.from_pretrained(str(tiny_mlm_dir), s.pooler, 32, mlp=s.mlp_only_train)
    install_projection(enc, s)
    body, head = enc.param_groups(s.lr, s.head_lr)
    assert (body["lr"], head["lr"]) == (s.lr, s.head_lr)
    assert {id(p) for p in head["params"]} == {id(p) for p in enc.mlp.parameters()}
    assert len(body["params"]) + len(head["params"]) == sum(p.requires_grad for p in enc.parameters())
    # without head_lr: one flat list in the encoder's parameter order (the optimizer as before)
    assert enc.param_groups(s.lr, None) == [p for p in enc.parameters() if p.requires_grad]
