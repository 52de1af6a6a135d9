"""The train stage as a user runs it: the CLI, the config section, and the Snakemake rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from hardneg.cli import main as cli_main
from hardneg.config import ConfigError, load_config
from hardneg.shards import write_shard
from hardneg.train.methods import presets
from hardneg.train.presets import settings_from_config

REPO = Path(__file__).resolve().parents[1]


def test_presets_carry_the_papers_hyperparameters():
    assert presets()["simcse"].settings["lr"] == 3e-5 and presets()["simcse"].settings["temperature"] == 0.05
    assert presets()["simcse_san"].settings["tau2"] == 0.08 and presets()["simcse_san"].settings["san_dropout"] == 0.2
    assert presets()["sncse_san"].settings["tau2"] == 0.1 and presets()["sncse"].settings["batch_size"] == 256
    o = presets()["osscse"].settings
    assert o["method_settings"] == {"margin": {"weight": 1e-3, "alpha": 0.05, "beta": 0.2}, "recall": {"gamma": 2e-3}}
    assert (o["lr"], o["batch_size"], o["epochs"]) == (1e-5, 64, 2)
    r = presets()["rankcse_san"].settings
    assert r["method_settings"]["listmle_san"]["weight"] == 0.4 and r["post_process"]


def test_config_layers_and_schema_errors():
    cfg = load_config([REPO / "config.yaml", REPO / "experiments/quick.yaml"])
    s = settings_from_config(cfg["train"], "osscse", 1, extra={"lr": 2e-5})
    assert s.pooler == "avg" and s.own("margin").weight == 1e-3 and s.lr == 2e-5 and s.seed == 1
    assert s.needed_columns() == ["negation", "paraphrase"]
    bad = {"train": {"init_model": "x", "methods": ["simcse"], "overrides": {"lr": -1}}}
    with pytest.raises(ConfigError, match=r"train\.overrides\.lr"):
        load_config([REPO / "config.yaml"], overrides=bad)
    with pytest.raises(ConfigError, match=r"train\.presets\.simcse\.tau9"):
        load_config([REPO / "config.yaml"], overrides={"train": {"presets": {"simcse": {"tau9": 1}}}})


def test_cli_print_settings_and_clear_errors(capsys, tmp_path, tiny_mlm_dir):
    assert cli_main(["train", "--method", "sncse_san", "--init-model", "bert-base-uncased",
                     "--set", "lr=2e-5", "--print-settings"]) == 0
    out = capsys.readouterr().out
    assert '"lr": 2e-05' in out and "needs columns: ['san', 'negation']" in out
    corpus = write_shard(pl.DataFrame({"id": pl.Series([0, 1, 2], dtype=pl.Int64), "text": ["a b", "c d", "e f"]}),
                         tmp_path / "c.parquet")
    rc = cli_main(["train", "--method", "simcse_san", "--init-model", str(tiny_mlm_dir), "--corpus", str(corpus),
                   "--san", str(corpus), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "column 'san' is missing" in err and "rules/san.smk" in err and "Traceback" not in err
    rc = cli_main(["train", "--method", "simcse", "--init-model", str(tiny_mlm_dir), "--set", "pooler=nope",
                   "--print-settings"])
    assert rc == 2 and "train setting 'pooler'" in capsys.readouterr().err


def test_cli_trains_and_exports(tmp_path, tiny_mlm_dir):
    texts = [f"sentence {i} about the weather" for i in range(12)]
    corpus = write_shard(pl.DataFrame({"id": pl.Series(range(12), dtype=pl.Int64), "text": texts}),
                         tmp_path / "c.parquet")
    proc = subprocess.run(
        [sys.executable, "-m", "hardneg", "train", "--method", "simcse", "--init-model", str(tiny_mlm_dir),
         "--set", "max_steps=2", "--set", "batch_size=4", "--set", "show_progress=false",
         "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--threads", "1"],
        check=False, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "model in" in proc.stdout
    assert (tmp_path / "run" / "model" / "modules.json").exists()
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 2


@pytest.mark.integration
def test_snakemake_train_rule(tmp_path, tiny_mlm_dir, mirror_dir):
    """The train rule for real on a tiny corpus and model: corpus -> train -> exported folder."""
    overlay = {
        "experiment": "ci", "mirror": str(mirror_dir),
        "corpus": {"max_sentences": 40, "shard_size": 20},
        "train": {"init_model": str(tiny_mlm_dir), "methods": ["simcse"], "seeds": [3], "gpus": 0, "threads": 1,
                  "overrides": {"batch_size": 8, "max_steps": 2, "dev_max_pairs": 30, "show_progress": False,
                                "pooler": "avg", "mlp_only_train": False}},
    }
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    target = "results/train/ci/simcse/seed3/summary.json"
    cmd = [str(REPO / ".venv/bin/snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
           "--configfile", str(REPO / "config.yaml"), str(tmp_path / "overlay.yaml"), "--cores", "2", target]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((tmp_path / target).read_text())
    assert summary["steps"] == 2 and summary["global_batch"] == 8 and summary["data"]["rows_in"] == 40
    assert (tmp_path / "results/train/ci/simcse/seed3/model/1_Pooling/config.json").exists()
    assert (tmp_path / "logs/train/ci/simcse/seed3.log").read_text().strip()
    # the resume state went once the model was exported (train.keep_checkpoints: false)
    assert not list((tmp_path / "results/train/ci/simcse/seed3").glob("work-*"))
    # nothing to do on a second run (code_version and params are stable), nor with the resume
    # state kept (keep_checkpoints is a derived param: no output depends on it)
    again = subprocess.run(cmd + ["-n"], check=False, capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in again.stdout + again.stderr
    keep = tmp_path / "keep.yaml"
    keep.write_text("train:\n  keep_checkpoints: true\n")
    with_keep = cmd[:-3] + [str(keep)] + cmd[-3:]  # another --configfile overlay, before --cores
    kept = subprocess.run(with_keep + ["-n"], check=False, capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in kept.stdout + kept.stderr, kept.stdout[-3000:]


def test_teacher_method_is_trained_first_in_the_dag(tmp_path, mirror_dir):
    """A rankcse_san whose teacher is {method: simcse}: the dry run schedules train simcse, and
    the student's train job takes the teacher's exported model as an input (SAN Eq. 6 teachers)."""
    overlay = {
        "experiment": "ci", "mirror": str(mirror_dir),
        "corpus": {"max_sentences": 40, "shard_size": 20},
        "train": {"init_model": "bert-base-uncased", "methods": ["rankcse_san"], "seeds": [3], "gpus": 0,
                  "presets": {"rankcse_san": {"teachers": [{"method": "simcse"}]}}},
    }
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    target = "results/train/ci/rankcse_san/seed3/summary.json"
    cmd = [str(REPO / ".venv/bin/snakemake"), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
           "--configfile", str(REPO / "config.yaml"), str(tmp_path / "overlay.yaml"), "--cores", "1",
           "-n", target]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    teacher = out.index("output: results/train/ci/simcse/seed3/model")
    student = out.index("output: results/train/ci/rankcse_san/seed3/model")
    assert teacher < student
    block = out[student - 2000: student]
    assert "results/train/ci/simcse/seed3/model" in block.split("rule train:")[-1]
