"""Paraphrase selection: MER window [0.15, 0.6], policies, reasons kept, contract columns."""

from __future__ import annotations

import polars as pl
import pytest

from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame, summarize
from hardneg.augment.backtranslation.translate import CANDIDATE_DTYPE
from hardneg.text import mer

ORIG = "the cat sat on the mat today"  # 7 words


def cands_frame(rows):
    """rows: (text, status, reason, [(pivot, candidate text or None), ...])"""
    return pl.DataFrame(
        {
            "id": list(range(len(rows))),
            "text": [r[0] for r in rows],
            "status": [r[1] for r in rows],
            "reason": pl.Series([r[2] for r in rows], dtype=pl.String),
            "augmenter": ["backtranslation"] * len(rows),
            "candidates": pl.Series(
                [
                    [
                        {"pivot": p, "forward": "x", "text": t, "error": None if t else "boom"}
                        for p, t in r[3]
                    ]
                    for r in rows
                ],
                dtype=CANDIDATE_DTYPE,
            ),
        }
    )


A = "the cat sat on the mat"  # MER 1/7 = 0.143: below the window
B = "the cat sat on a mat yesterday"  # MER 2/7 = 0.286
C = "a cat was sitting on the mat now"  # MER ~0.56
D = "dogs run"  # MER 1.0


def test_mers_of_fixture():
    assert mer(ORIG, A) == pytest.approx(1 / 7)
    assert 0.15 <= mer(ORIG, B) < mer(ORIG, C) <= 0.6
    assert mer(ORIG, D) == 1.0


@pytest.mark.parametrize(
    "policy, pivot, text", [("max_mer", "ru", C), ("min_mer", "de", B), ("pivot_order", "de", B)]
)
def test_policies(policy, pivot, text):
    frame = cands_frame([(ORIG, "ok", None, [("xx", A), ("de", B), ("ru", C), ("zz", D)])])
    out = select_frame(frame, ParaphraseConfig(policy=policy))
    row = out.row(0, named=True)
    assert (row["paraphrase_pivot"], row["paraphrase"], row["status"]) == (pivot, text, "ok")
    assert row["paraphrase_mer"] == pytest.approx(mer(ORIG, text))
    # Every candidate is kept with its MER, whatever was selected.
    assert [c["pivot"] for c in row["candidates"]] == ["xx", "de", "ru", "zz"]
    assert [c["mer"] for c in row["candidates"]] == pytest.approx(
        [mer(ORIG, t) for t in (A, B, C, D)]
    )


def test_no_candidate_in_range_keeps_reason_and_failures():
    frame = cands_frame(
        [
            (ORIG, "ok", None, [("de", A), ("ru", D)]),
            (ORIG, "ok", None, [("de", None), ("ru", B)]),
            ("", "dropped", "empty", []),
            (ORIG, "dropped", "translation failed: de: boom", [("de", None)]),
        ]
    )
    out = select_frame(frame, ParaphraseConfig())
    assert out.columns == [
        "id", "text", "status", "reason", "augmenter", "candidates", "paraphrase", "paraphrase_mer", "paraphrase_pivot"
    ]  # fmt: skip
    assert out["status"].to_list() == ["dropped", "ok", "dropped", "dropped"]
    assert out["reason"].to_list() == [
        "no candidate with MER in [0.15, 0.6] (below, above)",
        None,
        "empty",
        "translation failed: de: boom",
    ]
    assert out["paraphrase"].to_list() == [None, B, None, None]
    assert out.row(1, named=True)["candidates"][0] == {"pivot": "de", "text": None, "mer": None}
    s = summarize(out)
    assert s["rows"] == 4 and s["status"] == {"dropped": 3, "ok": 1} and s["pivot"] == {"ru": 1}


def test_window_is_configurable_and_inclusive():
    frame = cands_frame([(ORIG, "ok", None, [("de", A)])])
    out = select_frame(frame, ParaphraseConfig(mer_min=1 / 7, mer_max=1 / 7))
    assert out["paraphrase"].to_list() == [A]


def test_config_errors():
    with pytest.raises(ValueError, match="mer_min"):
        ParaphraseConfig.from_dict({"mer_min": 0.7, "mer_max": 0.6})
    with pytest.raises(ValueError, match="paraphrase.policy"):
        ParaphraseConfig.from_dict({"policy": "random"})
    with pytest.raises(ValueError, match="candidates shard has no 'candidates' column"):
        select_frame(
            pl.DataFrame({"id": [0], "text": ["a"], "status": ["ok"], "reason": [None]}),
            ParaphraseConfig(),
        )


def test_inspect_renders_backtranslation_shard(tmp_path):
    from hardneg.augment.inspect import inspect_shard
    from hardneg.shards import write_shard

    frame = cands_frame(
        [(ORIG, "ok", None, [("de", B), ("ru", C)]), (ORIG, "ok", None, [("de", A)])]
    )
    write_shard(select_frame(frame, ParaphraseConfig()), tmp_path / "shard-000.parquet")
    text = inspect_shard(tmp_path / "shard-000.parquet")
    assert "selected pivot:" in text
    assert f"* ru     MER {mer(ORIG, C):.3f}  {C}" in text
    assert "dropped: no candidate with MER in [0.15, 0.6] (below)" in text
