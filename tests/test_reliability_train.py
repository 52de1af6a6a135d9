"""Training and model loading refuse or redo what would otherwise be a silent wrong result:
a resume on changed inputs, a model folder without its tokenizer, a half-written export,
non-finite or non-integer settings, duplicate ids, broken weight files, shards without the
columns their view needs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl
import pytest
import torch

from hardneg.cli import main
from hardneg.shards import write_shard
from hardneg.train.presets import build_settings
from hardneg.train.trainer import train

N_ROWS = 16


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def lines(mirror_dir) -> list[str]:
    path = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt"
    with path.open(encoding="utf-8") as fh:
        return [next(fh).strip() for _ in range(N_ROWS)]


def corpus_shard(lines: list[str], n: int, path: Path) -> str:
    frame = pl.DataFrame({"id": pl.Series(range(n), dtype=pl.Int64), "text": lines[:n]})
    return str(write_shard(frame, path))


def tiny_settings(tiny_mlm_dir, **kw):
    base = {"batch_size": 4, "max_steps": 4, "eval_every": 100, "checkpoint_every": 2, "log_every": 1,
            "show_progress": False, "lr": 1e-3, "max_length": 24}
    base.update(kw)
    return build_settings("simcse", str(tiny_mlm_dir), seed=7, overrides=base)


def safetensors_of(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


# --- a resume continues only on the inputs it was saved with ----------------------------------
def test_resume_after_the_corpus_changed_starts_over(tmp_path, tiny_mlm_dir, lines, caplog):
    s = tiny_settings(tiny_mlm_dir)
    shard = tmp_path / "corpus.parquet"
    corpus_shard(lines, N_ROWS, shard)
    assert train(s, [str(shard)], tmp_path / "run", halt_after_steps=2) == {"halted_at": 2}
    corpus_shard(lines, N_ROWS - 4, shard)  # the corpus is rebuilt smaller between kill and re-run
    with caplog.at_level(logging.WARNING, logger="hardneg.train.checkpoint"):
        summary = train(s, [str(shard)], tmp_path / "run")
    assert "not resuming" in caplog.text and "input corpus[0]" in caplog.text and str(shard) in caplog.text
    assert "resumed from" not in caplog.text
    assert summary["data"]["rows_in"] == N_ROWS - 4
    # the same weights and metrics as a run that only ever saw the new corpus
    fresh = train(s, [str(shard)], tmp_path / "fresh")
    a, b = safetensors_of(tmp_path / "run" / "model"), safetensors_of(tmp_path / "fresh" / "model")
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)
    strip = lambda p: [{k: v for k, v in json.loads(x).items() if k != "sent_per_s"}
                       for x in p.read_text().splitlines()]
    assert strip(tmp_path / "run" / "metrics.jsonl") == strip(tmp_path / "fresh" / "metrics.jsonl")
    assert fresh["steps"] == summary["steps"]


def test_resume_on_unchanged_inputs_still_resumes(tmp_path, tiny_mlm_dir, lines, caplog):
    s = tiny_settings(tiny_mlm_dir)
    shard = corpus_shard(lines, N_ROWS, tmp_path / "corpus.parquet")
    train(s, [shard], tmp_path / "run", halt_after_steps=2)
    with caplog.at_level(logging.INFO):
        train(s, [shard], tmp_path / "run")
    assert "resumed from" in caplog.text and "not resuming" not in caplog.text


def test_input_digests_see_content_not_mtime(tmp_path):
    from hardneg.train.inputs import changed_inputs, input_digests

    a = tmp_path / "a.parquet"
    a.write_bytes(b"x" * 10)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    before = input_digests([a], {}, {"teachers[0]": str(model), "init_model": "bert-base-uncased"})
    assert set(before) == {"corpus[0]", "teachers[0]"}  # a hub id is named by the settings
    a.write_bytes(b"y" * 10)  # same size, other bytes
    (model / "extra.bin").write_bytes(b"")
    changed = changed_inputs(before, input_digests([a], {}, {"teachers[0]": str(model)}))
    assert len(changed) == 2 and changed[0].startswith("input corpus[0]") and "teachers[0]" in changed[1]
    assert changed_inputs(None, before)  # a state without digests is not trusted
