"""Every view of every preset is tokenized as the reference code builds it, on the real
bert-base-uncased vocabulary (shipped inside the packaged MiniLM).

The reference constructions are restated here (our code, not copied) from the snapshots read:
- Sense-GVT/SNCSE @ faa013eae581ad1bebb0b313520364e31bde7e25, ``SNCSE/train_SNCSE.py``:
  l. 47 ``PUNCTUATION = list(string.punctuation)``; l. 490-501 prompt pieces (``s1 = 'This sentence
  : " '``, ``ss1 = 'This sentence of " '``, ``s2 = ' " means [MASK] .'``, each tokenized alone);
  l. 504-505 sentence budgets ``max_seq_length - len(prefix) - len(s2) - 2``; l. 510-516 " ." after
  the sentence and the negation lacking end punctuation, the negation looked up with the
  period-appended sentence as key (fallback ``"Not " + sentence``); l. 518-534 anchor in ``s1``,
  positive and negation in ``ss1``, each ``[CLS] + prefix + sentence[:budget] + s2 + [SEP]``.
- bcai01/SAN @ 3b108ce3bfafd195bb20afa94dd2098ae002f0ba, ``models/sncse/SNCSE/train_SNCSE.py``
  l. 636-667 (SNCSE+SAN) and ``models/rlrd/train_1.py`` l. 721-758 (RLRD+SAN): the same, with the
  negation read from the row (``neg_soft``) and the SAN negative (``sent2``) in ``ss1`` WITHOUT
  " ." (that line is commented out).
- princeton-nlp/SimCSE ``train.py`` ``prepare_features``: ``tokenizer(sentences,
  max_length=max_seq_length, truncation=True)``: ``[CLS] + ids[:max_len - 2] + [SEP]``.
OssCSE and HiCL have no public code: OssCSE follows SNCSE's prompts (no " ."; its paraphrase and
negation in the positive's template, docs/deviations.md); HiCL re-trains SNCSE / SimCSE with their
official code, so a sentence short enough to be one segment is tokenized as those references do
(HiCL truncates at 512 tokens, not 32).
"""

from __future__ import annotations

import string

import pytest
import torch

from hardneg.encoders.tokenize import PromptTokenizer
from hardneg.train.presets import build_settings
from hardneg.train.step_model import StepModel

MAX_SEQ_LENGTH = 32  # the references' --max_seq_length (and our presets' max_length)
PUNCTUATION = list(string.punctuation)

TEXTS = [
    "The cat sat on the mat.",                  # ends in punctuation: unchanged
    "the results were not significant",          # no end punctuation: " ." appended
    'He said "hello"',                           # ends in '"', which string.punctuation holds
    "Paris is the capital of France …",          # '…' is not ASCII punctuation: " ." appended
    "Ünïcödé café — naïve façade  ",             # trailing spaces: stripped for the check only
    " ".join(["word"] * 40),                     # longer than the budget: truncated after the " ."
]
NEGATIONS = [
    "The cat did not sit on the mat.",
    "the results were significant",
    'He did not say "hello"',
    "Paris is not the capital of France …",
    "Not Ünïcödé café — naïve façade",
    " ".join(["not"] * 40),
]
SAN = [
    "The dog sat on the mat",                    # no end punctuation: SAN's negative gets no " ."
    "the results were very significant.",
    'She said "goodbye"',
    "Rome is the capital of France …",
    "Ünïcödé tea — naïve façade",
    " ".join(["word"] * 39 + ["bird"]),
]
PARAPHRASES = [
    "A cat was sitting on the mat",
    "The results were insignificant.",
    'He greeted with "hello"',
    "France's capital is Paris",
    "Ünïcödé café",
    " ".join(["word"] * 38),
]
SHORT = slice(0, 5)  # one HiCL segment each (at most 32 sentence tokens)


# ----- the references' constructions, restated ---------------------------------------------------
def _ids(tok, text: str) -> list[int]:
    return tok.convert_tokens_to_ids(tok.tokenize(text))


def _period(sentence: str) -> str:
    # train_SNCSE.py l. 511-512: `if sentence.strip()[-1] not in PUNCTUATION: sentence = sentence + " ."`
    return sentence + " ." if sentence.strip()[-1] not in PUNCTUATION else sentence


def _sncse_rows(tok, texts, negation_of, san=None, period=True, budget=MAX_SEQ_LENGTH):
    """{view: ids} of SNCSE's Different_Prompt_Negation features (l. 489-534), plus SAN's sent2
    column (SAN's copy l. 636-667). ``negation_of(sentence_after_period, i)`` is the lookup."""
    s1, ss1, s2 = _ids(tok, 'This sentence : " '), _ids(tok, 'This sentence of " '), _ids(tok, ' " means [MASK] .')
    len0, len1 = budget - len(s1) - len(s2) - 2, budget - len(ss1) - len(s2) - 2
    cls, sep = [tok.cls_token_id], [tok.sep_token_id]
    out: dict[str, list[list[int]]] = {"anchor": [], "positive": [], "negation": [], "san": []}
    for i, raw in enumerate(texts):
        sentence = _period(raw) if period else raw
        negation = negation_of(sentence, i)
        negation = _period(negation) if period else negation
        out["anchor"].append(cls + s1 + _ids(tok, sentence)[:len0] + s2 + sep)
        out["positive"].append(cls + ss1 + _ids(tok, sentence)[:len1] + s2 + sep)
        out["negation"].append(cls + ss1 + _ids(tok, negation)[:len1] + s2 + sep)
        if san is not None:  # tokens3: the SAN negative as it is, in the positive's prompt
            out["san"].append(cls + ss1 + _ids(tok, san[i])[:len1] + s2 + sep)
    return out


def _simcse_rows(tok, texts, budget=MAX_SEQ_LENGTH):
    return [[tok.cls_token_id] + _ids(tok, t)[: budget - 2] + [tok.sep_token_id] for t in texts]


def _by_row(negations):
    return lambda _sentence, i: negations[i]  # the row's own negation (SAN's neg_soft column)


# ----- ours: what the step model feeds the encoder ------------------------------------------------
class _Encoder:
    """Just what StepModel reads: the real PromptTokenizer; ``embed`` records the ids it gets."""

    device = torch.device("cpu")

    def __init__(self, tok, pooler: str) -> None:
        self.prompt = PromptTokenizer(tok, MAX_SEQ_LENGTH)
        self.pooler = pooler
        self.backbone = type("B", (), {"config": type("C", (), {"max_position_embeddings": 512})()})()
        self.batches: list[list[list[int]]] = []

    def modules(self):
        return []

    def embed(self, batch, use_mlp=True):
        self.batches.append(_unpad(batch))
        return torch.zeros(batch["input_ids"].shape[0], 2)


def _unpad(batch) -> list[list[int]]:
    return [row[mask.bool()].tolist() for row, mask in zip(batch["input_ids"], batch["attention_mask"])]


def _our_rows(tok, method: str, texts, extra, **overrides) -> dict[str, list[list[int]]]:
    s = build_settings(method, "bert-base-uncased", 1, overrides=overrides)
    enc = _Encoder(tok, s.pooler)
    model = StepModel(enc, s)
    if s.uses("hicl"):  # HiCL tokenizes its segments inside forward: read what reaches the encoder
        model(list(texts), extra)
        rows, names = enc.batches[0], ["anchor", "positive"] + [c for c in ("negation", "paraphrase") if c in extra]
        assert len(rows) == len(names) * len(texts), "one segment per sentence expected"
        return {name: rows[k * len(texts) : (k + 1) * len(texts)] for k, name in enumerate(names)}
    tokens = model.tokenize(list(texts), extra)
    rows, out, start = _unpad(tokens["views"]), {}, 0
    for name, n in tokens["groups"]:
        out[name], start = rows[start : start + n], start + n
    if "san" in tokens:
        out["san"] = _unpad(tokens["san"])
    return out


def _assert_views_equal(ours, ref, views, tok):
    for view in views:
        for i, (a, b) in enumerate(zip(ours[view], ref[view], strict=True)):
            assert a == b, (f"view {view!r}, row {i}:\n ours      {tok.convert_ids_to_tokens(a)}\n"
                            f" reference {tok.convert_ids_to_tokens(b)}")


# ----- the prompt presets -------------------------------------------------------------------------
def test_sncse_views_follow_train_sncse(bert_tokenizer):
    # our default: the row's own negation (docs/deviations.md: SNCSE's lookup miss is an option)
    ref = _sncse_rows(bert_tokenizer, TEXTS, _by_row(NEGATIONS))
    ours = _our_rows(bert_tokenizer, "sncse", TEXTS, {"negation": NEGATIONS})
    _assert_views_equal(ours, ref, ("anchor", "positive", "negation"), bert_tokenizer)


def test_sncse_negation_lookup_quirk_reproduces_train_sncse_literally(bert_tokenizer):
    # train_SNCSE.py l. 514: negation.get(sentence, "Not " + sentence) with the period-appended
    # sentence as key, the keys being the stripped corpus lines (generate_soft_negative_samples.py)
    table = {t.strip(): n for t, n in zip(TEXTS, NEGATIONS)}
    ref = _sncse_rows(bert_tokenizer, TEXTS, lambda sentence, _i: table.get(sentence, "Not " + sentence))
    ours = _our_rows(bert_tokenizer, "sncse", TEXTS, {"negation": NEGATIONS}, negation_period_fallback=True)
    _assert_views_equal(ours, ref, ("anchor", "positive", "negation"), bert_tokenizer)
    assert ref["negation"][1][:12] != _sncse_rows(bert_tokenizer, TEXTS, _by_row(NEGATIONS))["negation"][1][:12]


@pytest.mark.parametrize("method", ["sncse_san", "rlrd_san"])
def test_san_prompt_presets_follow_sans_sncse_copies(bert_tokenizer, method):
    ref = _sncse_rows(bert_tokenizer, TEXTS, _by_row(NEGATIONS), san=SAN)
    ours = _our_rows(bert_tokenizer, method, TEXTS, {"negation": NEGATIONS, "san": SAN})
    _assert_views_equal(ours, ref, ("anchor", "positive", "negation", "san"), bert_tokenizer)


def test_hicl_sncse_views_follow_sncse(bert_tokenizer):
    texts, negs = TEXTS[SHORT], NEGATIONS[SHORT]
    ref = _sncse_rows(bert_tokenizer, texts, _by_row(negs), budget=512)
    ours = _our_rows(bert_tokenizer, "hicl_sncse", texts, {"negation": negs})
    # negation first: row 0 ends in punctuation, so its template alone decides the first check
    _assert_views_equal(ours, ref, ("negation", "anchor", "positive"), bert_tokenizer)


def test_osscse_views_use_sncse_prompts_without_the_period(bert_tokenizer):
    # no OssCSE code: SNCSE's prompts, paraphrase and negation in the positive's (deviations page)
    ref = _sncse_rows(bert_tokenizer, TEXTS, _by_row(NEGATIONS), period=False)
    ref["paraphrase"] = _sncse_rows(bert_tokenizer, TEXTS, _by_row(PARAPHRASES), period=False)["negation"]
    ours = _our_rows(bert_tokenizer, "osscse", TEXTS, {"negation": NEGATIONS, "paraphrase": PARAPHRASES})
    _assert_views_equal(ours, ref, ("anchor", "positive", "negation", "paraphrase"), bert_tokenizer)


# ----- presets without prompts: SimCSE's tokenization ---------------------------------------------
@pytest.mark.parametrize("method", ["simcse", "simcse_san", "rankcse", "rankcse_san", "hncse_pm"])
def test_plain_presets_tokenize_as_simcse(bert_tokenizer, method):
    extra = {"san": SAN} if method.endswith("_san") else {}
    ours = _our_rows(bert_tokenizer, method, TEXTS, extra)
    ref = {"anchor": _simcse_rows(bert_tokenizer, TEXTS), "positive": _simcse_rows(bert_tokenizer, TEXTS),
           "san": _simcse_rows(bert_tokenizer, SAN)}
    _assert_views_equal(ours, ref, ("anchor", "positive", *extra), bert_tokenizer)


def test_hicl_simcse_short_sentences_tokenize_as_simcse(bert_tokenizer):
    ours = _our_rows(bert_tokenizer, "hicl_simcse", TEXTS[SHORT], {})
    ref = {"anchor": _simcse_rows(bert_tokenizer, TEXTS[SHORT]), "positive": _simcse_rows(bert_tokenizer, TEXTS[SHORT])}
    _assert_views_equal(ours, ref, ("anchor", "positive"), bert_tokenizer)


def test_negation_period_fallback_without_the_period_names_the_setting():
    with pytest.raises(ValueError, match="train setting 'negation_period_fallback'.*append_period: true"):
        build_settings("simcse", "bert-base-uncased", 1, overrides={"negation_period_fallback": True})
