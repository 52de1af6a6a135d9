"""``hardneg inspect``: renderer registry, marked changes, statistics; ``hardneg san`` CLI."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from test_lexicon import san_lexicon

from hardneg.augment import inspect as insp
from hardneg.cli import main
from hardneg.shards import write_shard


def test_mark_changes():
    assert insp.mark_changes("a man plays a guitar .", "a dog plays the guitar .") == "a [dog] plays [the] guitar ."
    assert insp.mark_changes("a b c", "a c") == "a [-b] c"


def _san_like(n=4):
    return pl.DataFrame(
        {
            "id": pl.Series(np.arange(n), dtype=pl.Int64),
            "text": ["A man plays a guitar."] * (n - 1) + [""],
            "status": ["ok"] * (n - 1) + ["dropped"],
            "reason": [None] * (n - 1) + ["input:empty"],
            "augmenter": ["san"] * n,
            "san": ["a dog eats a guitar."] * (n - 1) + [None],
            "truncated": [False] * n,
            "iter0": ["a man plays a guitar."] * (n - 1) + [None],
            "iter1": ["a dog plays a guitar."] * (n - 1) + [None],
            "iter2": ["a dog eats a guitar."] * (n - 1) + [None],
            "masked1": [[2]] * (n - 1) + [None],
            "masked2": [[3]] * (n - 1) + [None],
        }
    )


def test_render_san_shard(tmp_path):
    path = tmp_path / "shard-000.parquet"
    write_shard(_san_like(), path)
    text = insp.inspect_shard(path, sample=10)
    assert "augmenter: san" in text and "rows: 4" in text
    assert "input:empty" in text
    assert "a [dog] plays a guitar." in text and "a dog [eats] a guitar." in text
    # MER to the input per iteration: 1 of 5 words, then 2 of 5
    assert "| 1         | 0.2 " in text and "| 2         | 0.4 " in text


def test_registry_and_errors(tmp_path):
    frame = _san_like().with_columns(pl.lit("custom").alias("augmenter"))
    with pytest.raises(ValueError, match="no renderer registered for augmenter 'custom'"):
        insp.inspect_frame(frame)
    insp.register_renderer("custom", lambda f, n, s: f"CUSTOM {f.height}")
    assert "CUSTOM 4" in insp.inspect_frame(frame)
    with pytest.raises(ValueError, match="missing column"):
        insp.inspect_frame(pl.DataFrame({"id": [1], "text": ["x"]}), source="x.parquet")


def test_cli_san_then_inspect(tmp_path, tiny_mlm_dir, bert_tokenizer, tmp_path_factory, capsys):
    lexicon = san_lexicon(tmp_path_factory, bert_tokenizer)
    inp = tmp_path / "in.parquet"
    write_shard(pl.DataFrame({"id": pl.Series([7, 8, 9], dtype=pl.Int64),
                              "text": ["The cat sat on the old mat in the kitchen.", "", "Dogs bark loudly at night near the farm."]}), inp)
    out = tmp_path / "out.parquet"
    rc = main(["san", str(inp), str(out), "--mlm", str(tiny_mlm_dir), "--lexicon", str(lexicon),
               "--batch-size", "2", "--seed", "5", "--iterations", "3", "-q"])
    assert rc == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["rows"] == 3 and stats["reasons"]["input:empty"] == 1
    frame = pl.read_parquet(out)
    assert "iter3" in frame.columns and "iter4" not in frame.columns
    assert main(["inspect", str(out), "-n", "2"]) == 0
    shown = capsys.readouterr().out
    assert "iter3:" in shown and "MER to the input" in shown
    # a missing input file: one clear line, exit 2, no traceback
    assert main(["san", str(tmp_path / "missing.parquet"), str(out), "--mlm", str(tiny_mlm_dir), "--lexicon", str(lexicon)]) == 2
    assert "input shard not found" in capsys.readouterr().err
