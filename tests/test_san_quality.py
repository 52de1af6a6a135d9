"""SAN quality filter and the negation post-processing (Appendix C)."""

from __future__ import annotations

from itertools import pairwise

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.augment.quality import (
    QualityConfig,
    apply_negation_postprocess,
    input_reason,
    output_reason,
    unk_reason,
)


def test_output_reasons():
    cfg = QualityConfig()
    assert output_reason("a man plays a guitar .", "- . , p .", cfg) == "mostly_symbols"
    assert output_reason("hi there", "- p", cfg) == "too_short"
    assert output_reason("a man plays a guitar.", "A man  plays a guitar.", cfg) == "identical_to_input"
    assert output_reason("a man plays a guitar.", "a dog eats a guitar.", cfg) is None
    assert output_reason("a b c", "a b c", QualityConfig(reject_identical=False)) is None


def test_input_reasons():
    cfg = QualityConfig()
    assert input_reason(None, cfg) == "null_text"
    assert input_reason(" \t", cfg) == "empty"
    assert input_reason("🙂 123 !!", cfg) == "no_letters"
    assert input_reason("Привет, как дела?", cfg) == "non_latin_script"
    assert input_reason("Café au lait, s'il vous plaît.", cfg) is None  # Latin script passes
    assert unk_reason(3, 4, cfg) == "mostly_unknown_tokens" and unk_reason(1, 4, cfg) is None
    with pytest.raises(ValueError, match="postprocess"):
        QualityConfig(postprocess="paraphrase")


def test_negation_substitution_keeps_reasons():
    frame = pl.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "status": ["ok", "dropped", "dropped", "dropped"],
            "reason": [None, "quality:too_short", "quality:mostly_symbols", "input:empty"],
            "san": ["a dog eats.", None, None, None],
        }
    )
    neg = pl.DataFrame({"id": [4, 3, 2, 1], "negation": ["x", None, "it did not rain.", "a man does not eat."]})
    out = apply_negation_postprocess(frame, neg)
    assert out["id"].to_list() == [1, 2, 3, 4]
    assert out["status"].to_list() == ["ok", "substituted", "dropped", "dropped"]
    assert out["san"].to_list() == ["a dog eats.", "it did not rain.", None, None]
    assert out["reason"].to_list() == [None, "quality:too_short", "quality:mostly_symbols; no negation available", "input:empty"]
    with pytest.raises(ValueError, match="negation shard"):
        apply_negation_postprocess(frame, None)


def _input_reason_by_definition(text, cfg):
    """input_reason as first written (per character), the fast paths' specification."""
    if text is None:
        return "null_text"
    if not text.strip():
        return "empty"
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "no_letters"
    if sum(c.isascii() for c in letters) / len(letters) < cfg.min_latin_share:
        return "non_latin_script"
    return None


def _output_reason_by_definition(reference, output, cfg):
    """output_reason as first written (per word), the fast paths' specification."""
    words = output.split()
    if len(words) < cfg.min_words:
        return "too_short"
    if sum(any(c.isalnum() for c in w) for w in words) / len(words) < cfg.min_alnum_share:
        return "mostly_symbols"
    run = best = 1
    for prev, cur in pairwise(words):
        run = run + 1 if cur.lower() == prev.lower() else 1
        best = max(best, run)
    if cfg.max_repeat_run and best > cfg.max_repeat_run:
        return "repeated_word"
    if cfg.reject_identical and " ".join(words).lower() == " ".join(reference.split()).lower():
        return "identical_to_input"
    return None


_ALPHABET = "aAbB zZ9_.,-'!\t\n\x1c\u00a0\u2003éÉßΣσςİ²½Ⅻ٣中😀\u212aſ"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=24), st.text(alphabet=_ALPHABET, max_size=24),
       st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0]))
def test_fast_checks_equal_their_definitions(a, b, repeat, share):
    cfg = QualityConfig(max_repeat_run=repeat, min_alnum_share=share, min_latin_share=share, min_words=2)
    assert input_reason(a, cfg) == _input_reason_by_definition(a, cfg)
    assert output_reason(a, b, cfg) == _output_reason_by_definition(a, b, cfg)
    assert output_reason(b, b.upper(), cfg) == _output_reason_by_definition(b, b.upper(), cfg)


def test_mostly_unknown_matches_unk_reason():
    import numpy as np

    from hardneg.augment.quality import mostly_unknown

    cfg = QualityConfig()
    unk, pieces = np.array([3, 1, 0, 2, 1]), np.array([4, 4, 0, 4, -1])
    want = [unk_reason(int(u), int(p), cfg) is not None for u, p in zip(unk, pieces)]
    assert mostly_unknown(unk, pieces, cfg).tolist() == want == [True, False, False, False, False]
