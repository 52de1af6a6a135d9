"""SAN's optional decoding rules (hardneg.augment.san.fill): same_kind, forbid_adjacent, their key."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_lexicon import san_lexicon

from hardneg.augment.san import fill
from hardneg.augment.san.key import OPTIONAL_RULES, keyed_settings
from hardneg.augment.san.lexicon import load_lexicon
from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig
from hardneg.models.load import load_masked_lm

torch.set_num_threads(2)

SENTENCES = [
    "A man is playing a guitar on the stage in front of many people, 20 or 30 of them.",
    "The quick brown fox jumps over the lazy dog in 1999.",
    "Scientists discovered a new species of frog in the rainforest last year.",
    "She did not want to go to the party because she was tired.",
    "The committee approved the budget for the new hospital building.",
    "Stock markets fell sharply on Monday after the central bank raised interest rates.",
]


@pytest.fixture(scope="module")
def mlm(tiny_mlm_dir):
    return load_masked_lm(str(tiny_mlm_dir), setting="san.mlm", device="cpu")


@pytest.fixture(scope="module")
def mask_prob(tmp_path_factory, bert_tokenizer, mlm):
    return load_lexicon(san_lexicon(tmp_path_factory, bert_tokenizer), tokenizer=mlm[0])["mask_prob"].to_numpy()


def _seqs(tok, copies: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    seqs = [np.asarray(tok(s)["input_ids"]) for s in SENTENCES] * copies
    return seqs, np.arange(len(seqs))


def _favouring(pred: MaskPredictor, tok, words: list[str]) -> MaskPredictor:
    """The predictor with its head pushed towards ``words`` (first most): a collapsing MLM, which
    fills every masked position with the same frequent word as the weak bootstrap MLM does."""
    head = pred.head
    bias = torch.zeros(pred.forbidden.shape[0])
    for rank, w in enumerate(words):
        bias[tok.convert_tokens_to_ids(w)] = 100.0 - rank
    pred.head = lambda h: head(h) + bias
    return pred


def test_vocab_kinds_of_wordpiece_entries(bert_tokenizer):
    kinds = fill.vocab_kinds(bert_tokenizer, len(bert_tokenizer))
    kind = lambda t: fill.KINDS[kinds[bert_tokenizer.convert_tokens_to_ids(t)]]
    tokens = ("guitar", "α", "1999", ",", "##ing", "##α", "##9", "##,")
    assert [kind(t) for t in tokens] == [*fill.KINDS[:4], *fill.KINDS[4:]]
    assert fill.KINDS[4:] == ("word piece", "letters piece", "number piece", "other piece")


def test_vocab_kinds_refuses_a_tokenizer_without_continuation_pieces():
    class ByteLevelTokenizer:  # the class name decides: no WordPiece '##' prefix
        pass

    with pytest.raises(ValueError, match="san.same_kind needs a WordPiece tokenizer"):
        fill.vocab_kinds(ByteLevelTokenizer(), 10)


def test_adjacent_neighbours_and_runs():
    ids = np.array([[101, 5, 6, 7, 8, 102], [101, 9, 10, 11, 12, 102]])
    mask = np.array([[0, 1, 1, 0, 1, 0], [0, 0, 1, 1, 1, 0]], dtype=bool)
    left, right, run = fill.adjacent(ids, mask)
    assert left.tolist() == [101, -1, 7, 9, -1, -1]
    assert right.tolist() == [-1, 7, 102, -1, -1, 102]
    assert run.tolist() == [0, 1, 0, 0, 1, 2]


@pytest.mark.parametrize("decoding", ["argmax", "sample"])
def test_same_kind_keeps_every_masked_entry_of_its_kind(mlm, mask_prob, decoding):
    tok, model = mlm
    kinds = fill.vocab_kinds(tok, len(tok))
    seqs, sids = _seqs(tok)
    # the random tiny MLM fills masked words with pieces and symbols; the rule keeps kinds
    for same_kind, expect in ((False, False), (True, True)):
        pred = MaskPredictor(model, tok, mask_prob, SanConfig(seed=5, decoding=decoding, same_kind=same_kind))
        new, masked = pred.iterate(seqs, sids, iteration=1)
        pairs = [(s[m], n[m]) for s, n, m in zip(seqs, new, masked, strict=True) if m]
        assert sum(len(o) for o, _ in pairs) > 50
        kept = all((kinds[o] == kinds[p]).all() for o, p in pairs)
        assert kept == expect


@pytest.mark.parametrize("decoding", ["argmax", "sample"])
def test_forbid_adjacent_no_masked_entry_equals_a_neighbour(mlm, mask_prob, decoding):
    tok, model = mlm
    seqs, sids = _seqs(tok)
    runs = 0
    for forbid in (False, True):
        cfg = SanConfig(seed=5, decoding=decoding, top_k=3, forbid_adjacent=forbid)
        pred = _favouring(MaskPredictor(model, tok, mask_prob, cfg), tok, ["the", "of", "a"])
        new, masked = pred.iterate(seqs, sids, iteration=1)
        equal = sum(int(n[p] == n[p - 1]) + int(n[p] == n[p + 1]) for n, m in zip(new, masked, strict=True) for p in m)
        runs += sum(int(p - 1 in m) for m in masked for p in m)  # adjacent masked positions: the run path
        if forbid:
            assert equal == 0
            # where a neighbour is no obstacle the favoured word still wins: the rule bans, not reshuffles
            assert sum(int(n[p] == tok.convert_tokens_to_ids("the")) for n, m in zip(new, masked, strict=True) for p in m) > 0
        else:
            assert equal > 20  # the collapsing MLM repeats "the the"
    assert runs > 0


def test_rules_refused_with_replace_all():
    with pytest.raises(ValueError, match="san.same_kind constrains the masked positions"):
        SanConfig(same_kind=True, replace="all")
    with pytest.raises(ValueError, match="san.forbid_adjacent constrains the masked positions"):
        SanConfig(forbid_adjacent=True, replace="all")


def test_rules_keyed_and_recorded_only_when_set():
    """Off, they leave the shard path and the stats' config as they are without them; on, both change."""
    base = {"iterations": 4, "decoding": "argmax", "precision": "fp32"}
    assert keyed_settings(base | {k: v for k, v in OPTIONAL_RULES.items()}) == keyed_settings(base)
    for name in OPTIONAL_RULES:
        assert keyed_settings(base | {name: True})[name] is True
        assert name not in SanConfig().as_dict()
        assert SanConfig(**{name: True}).as_dict()[name] is True
    assert OPTIONAL_RULES == {name: getattr(SanConfig(), name) for name in OPTIONAL_RULES}


def test_optional_rules_defaults_are_the_schema_defaults():
    from hardneg.config import schema_default

    assert OPTIONAL_RULES == {k: schema_default(f"san.{k}") for k in OPTIONAL_RULES}
