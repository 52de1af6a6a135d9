"""experiments/quick-hub.yaml: the quick experiment with a pretrained hub MLM for SAN and bert-base as
the encoder. No hub here: its DAG is checked with a dry run, and its SAN half runs for real with a
tiny MLM in the hub model's place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hardneg.config import load_yaml
from hardneg.shards import write_shard

ROOT = Path(__file__).resolve().parents[1]
HUB = ROOT / "experiments/quick-hub.yaml"


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)


def test_quick_hub_differs_from_quick_only_in_models_and_name():
    quick, hub = load_yaml(ROOT / "experiments/quick.yaml"), load_yaml(HUB)
    assert hub["san"]["mlm"] in ("distilbert-base-uncased", "bert-base-uncased")
    assert hub["train"]["init_model"] == "bert-base-uncased" and hub["experiment"] == "quick-hub"
    for key in ("corpus", "negation", "backtranslation", "lexicon", "data", "report"):
        assert hub[key] == quick[key], key
    same = {k: v for k, v in quick["train"]["overrides"].items() if k in ("batch_size", "max_steps", "eval_every", "precision")}
    assert {k: hub["train"]["overrides"][k] for k in same} == same
    assert hub["train"]["methods"] == quick["train"]["methods"] and hub["train"]["seeds"] == quick["train"]["seeds"]


@pytest.mark.integration
def test_quick_hub_dry_run_has_no_bootstrap_and_trains_from_bert_base(tmp_path, shared_dir):
    (tmp_path / "shared").symlink_to(shared_dir)  # the overlay's ../shared/mirror, from tmp_path/work
    work = tmp_path / "work"
    work.mkdir()
    plan = smk(work, "--configfile", str(ROOT / "config.yaml"), str(HUB), "-n", "-p")
    out = plan.stdout + plan.stderr
    assert plan.returncode == 0, out[-3000:]
    assert "rule bootstrap_mlm:" not in out and "rule san:" in out and "rule train:" in out
    assert "results/train/quick-hub/simcse_san/seed42" in out and "results/report/quick-hub/summary.json" in out


@pytest.mark.integration
def test_quick_hub_san_runs_with_a_tiny_mlm_in_the_hub_models_place(tmp_path, tiny_mlm_dir, mirror_dir, shared_dir):
    src = next(mirror_dir.rglob("wiki1m_for_simcse.txt"))
    texts = [t for t in src.read_text(encoding="utf-8").splitlines()[:40] if len(t.split()) > 6][:10]
    corpus = tmp_path / "results/corpus/wiki1m_for_simcse-n20-ss10"
    for i in range(2):
        part = texts[5 * i : 5 * i + 5]
        write_shard(pl.DataFrame({"id": pl.Series(range(5 * i, 5 * i + 5), dtype=pl.Int64), "text": part}),
                    corpus / f"shard-00{i}.parquet")
    small = tmp_path / "tiny-models.yaml"
    small.write_text(f"corpus:\n  max_sentences: 20\n  shard_size: 10\nsan:\n  mlm: {tiny_mlm_dir}\n  batch_size: 3\n"
                     # SAN's released lexicon (bert-base-uncased ids, the tiny MLM's tokenizer): no spaCy pass
                     f"lexicon:\n  mode: file\n  reference: null\n  file: {shared_dir / 'data/reference/san_vocab_pos_end.txt'}\n")
    configs = ["--configfile", str(ROOT / "config.yaml"), str(HUB), str(small)]
    run = smk(tmp_path, *configs, "--allowed-rules", "lexicon", "san", "san_all", "--cores", "2", "san_all")
    assert run.returncode == 0, run.stderr[-4000:]
    assert not (tmp_path / "results/mlm").exists()  # a pretrained MLM: nothing is bootstrapped
    san_dir = next((tmp_path / "results/augment/san/wiki1m_for_simcse-n20-ss10").iterdir())
    stats = json.loads((san_dir / "shard-000.json").read_text())
    assert stats["mlm"] == str(tiny_mlm_dir) and stats["mlm_heldout"] is None and stats["rows"] == 5
    assert pl.read_parquet(san_dir / "shard-001.parquet")["id"].to_list() == list(range(5, 10))
