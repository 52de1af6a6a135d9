"""The report's SAN examples: masked words «marked» from the shard's token positions, substituted
words [marked], kept/dropped counts, and the low-accuracy warning from the MLM's held-out figure."""

from __future__ import annotations

import json

import polars as pl

from hardneg.report.san_examples import MIN_HELDOUT_TOP1, mark_masked, san_examples
from hardneg.shards import write_shard


def test_mark_masked_marks_whole_words_from_token_positions(bert_tokenizer):
    # positions are word-piece positions with [CLS] = 0; "ballarat" is several pieces
    text = "the discovery of gold in ballarat"
    ids = bert_tokenizer(text)["input_ids"]
    pieces = bert_tokenizer.convert_ids_to_tokens(ids)
    gold = pieces.index("gold")
    bal = next(i for i, p in enumerate(pieces) if p.startswith("##"))  # a piece inside "ballarat"
    assert mark_masked(text, [gold, bal], bert_tokenizer) == "the discovery of «gold» in «ballarat»"
    assert mark_masked(text, [len(ids) + 3], bert_tokenizer) is None  # outside the sequence
    assert mark_masked(text, [0], bert_tokenizer) is None  # [CLS] is never a masked word


def _shard(tmp_path, tokenizer_dir, top1, config=None):
    rows = {
        "id": [0, 1, 2], "text": ["The cat sat.", "A dog ran home.", "x"],
        "status": ["ok", "ok", "dropped"], "reason": [None, None, "quality:repeated_word"],
        "augmenter": ["san"] * 3, "san": ["the dog sat.", "a dog walked home.", None],
        "iter0": ["the cat sat.", "a dog ran home.", "x"],
        "iter1": ["the dog sat.", "a dog walked home.", "x x x"],
        "masked1": [[2], [3], [1]],
    }
    path = tmp_path / "shard-000.parquet"
    write_shard(pl.DataFrame(rows), path)
    heldout = {"masked_tokens": 100, "top1": top1, "top5": 60.0, "unigram_top1": 5.0, "unigram_top5": 17.0}
    side = {"mlm": str(tokenizer_dir), "mlm_heldout": heldout} | ({"config": config} if config else {})
    path.with_suffix(".json").write_text(json.dumps(side))
    return path


def test_san_examples_mark_words_and_count_rows(tmp_path, tiny_mlm_dir):
    ex, notes = san_examples([_shard(tmp_path, tiny_mlm_dir, 40.0)], examples=5)
    assert ex["id"].to_list() == [0, 1]
    assert ex["input (masked words «marked»)"].to_list() == ["the «cat» sat.", "a dog «ran» home."]
    assert ex["negative (substituted words [marked])"].to_list() == ["the [dog] sat.", "a dog [walked] home."]
    assert notes[0] == "SAN: 2 of 3 rows kept (66.7%), 1 dropped (1 quality:repeated_word)."
    assert "top-1 40.0%" in notes[1] and not any("not show" in n for n in notes)


def test_san_examples_warn_when_the_mlm_is_too_weak(tmp_path, tiny_mlm_dir):
    _, notes = san_examples([_shard(tmp_path, tiny_mlm_dir, MIN_HELDOUT_TOP1 - 0.1)], examples=1)
    assert any(f"below {MIN_HELDOUT_TOP1:.0f}%" in n for n in notes)


def test_san_examples_say_why_masked_words_are_not_marked(tmp_path):
    ex, notes = san_examples([_shard(tmp_path, tmp_path / "no-such-model", 40.0)], examples=1)
    assert ex["input (masked words «marked»)"][0] == "the cat sat. (masked token positions [2])"
    assert any(n.startswith("Masked words are not marked: tokenizer of") for n in notes)


def test_san_examples_name_the_decoding_rules_that_were_on(tmp_path, tiny_mlm_dir):
    from hardneg.augment.san.mask_predict import SanConfig

    _, plain = san_examples([_shard(tmp_path, tiny_mlm_dir, 40.0, SanConfig().as_dict())], examples=1)
    assert not any("Decoding rules" in n for n in plain)
    _, ruled = san_examples([_shard(tmp_path, tiny_mlm_dir, 40.0, SanConfig(same_kind=True, forbid_adjacent=True).as_dict())], examples=1)
    assert any(n.startswith("Decoding rules on (san.same_kind, san.forbid_adjacent)") for n in ruled)
