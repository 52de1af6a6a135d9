"""Corpus preparation: drops with reasons, counts that add up, stable ids, leakage, bytes."""

from __future__ import annotations

import polars as pl
import pytest

from hardneg.data.archive import extract_senteval
from hardneg.data.corpus import normalise, prepare_corpus


def _run(tmp_path, lines: bytes, max_sentences=10, shard_size=4, senteval_dir=None, tag="out"):
    src = tmp_path / "corpus.txt"
    src.write_bytes(lines)
    out = tmp_path / tag
    n = -(-max_sentences // shard_size)
    shards = [out / f"shard-{i:03d}.parquet" for i in range(n)]
    manifest = prepare_corpus(src, shards, out / "rejects.parquet", out / "manifest.json",
                              max_sentences=max_sentences, shard_size=shard_size,
                              senteval_dir=senteval_dir, progress=False)
    return out, shards, manifest


def test_normalise_whitespace():
    assert normalise("  a\tb\u00a0 c \r") == "a b c"


def test_drops_have_reasons_and_counts_add_up(tmp_path):
    lines = b"First  sentence.\n\n   \nSecond one.\nFirst sentence.\n\xff\xfe bad bytes\nThird.\n"
    out, shards, m = _run(tmp_path, lines)
    assert m["lines_read"] == 7
    assert m["kept"] == 3
    assert m["dropped"] == {"invalid_utf8": 1, "control_character": 0, "empty": 2, "too_short": 0,
                            "duplicate": 1}
    assert m["kept"] + m["dropped_total"] == m["lines_read"]
    rej = pl.read_parquet(out / "rejects.parquet")
    assert rej.filter(pl.col("reason") == "duplicate")["duplicate_of"].to_list() == [0]
    assert rej.filter(pl.col("reason") == "invalid_utf8")["id"].to_list() == [5]
    kept = pl.concat([pl.read_parquet(s) for s in shards])
    assert kept["id"].to_list() == [0, 3, 6]  # ids are source line numbers
    assert kept["text"].to_list() == ["First sentence.", "Second one.", "Third."]


def test_cap_and_static_shards(tmp_path):
    lines = b"".join(f"sentence number {i}\n".encode() for i in range(20))
    _, shards, m = _run(tmp_path, lines, max_sentences=10, shard_size=4)
    assert [s["rows"] for s in m["shards"]] == [4, 4, 2]
    assert m["lines_read"] == 10 and m["lines_after_cap"] == 10
    ids = [pl.read_parquet(s)["id"].to_list() for s in shards]
    assert ids == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_trailing_shards_may_be_empty(tmp_path):
    _, shards, m = _run(tmp_path, b"only one\n", max_sentences=10, shard_size=4)
    assert [s["rows"] for s in m["shards"]] == [1, 0, 0]
    empty = pl.read_parquet(shards[2])
    assert empty.height == 0 and empty.columns == ["id", "text", "in_eval"]


def test_same_input_same_bytes(tmp_path):
    lines = b"".join(f"sentence {i % 7}\n".encode() for i in range(30))
    _, a, _ = _run(tmp_path, lines, tag="a")
    _, b, _ = _run(tmp_path, lines, tag="b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="empty corpus"):
        _run(tmp_path, b"\n  \n\n")
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_leakage_against_senteval(tmp_path, senteval_dir):
    # An STS-B test sentence, raw (cased, untokenised) as it would appear in a corpus.
    sts_line = (senteval_dir / "STS/STSBenchmark/sts-test.csv").read_text().splitlines()[0]
    tokenised = sts_line.split("\t")[5]
    raw = tokenised.replace(" .", ".").capitalize()
    _, shards, m = _run(tmp_path, f"{raw}\nNot in any benchmark xyzzy.\n".encode(),
                          senteval_dir=senteval_dir)
    assert m["leakage"]["kept_sentences_in_eval"] == 1
    assert m["leakage"]["per_dataset"]["STSBenchmark"] == 1
    assert pl.read_parquet(shards[0])["in_eval"].to_list() == [True, False]


def test_extract_senteval_rejects_corrupt_tar(tmp_path, mirror_dir):
    tar = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar"
    bad = tmp_path / "senteval.tar"
    bad.write_bytes(tar.read_bytes()[: 3_000_000])  # truncated
    with pytest.raises(ValueError, match="corrupt or truncated|not a SentEval archive"):
        extract_senteval(bad, tmp_path / "senteval")
    assert not (tmp_path / "senteval").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["senteval.tar"]
