"""SAN quality filter and the negation post-processing (Appendix C)."""

from __future__ import annotations

import polars as pl
import pytest

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
