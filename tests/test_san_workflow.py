"""The SAN rules run for real by Snakemake (lexicon, bootstrap_mlm, san) on two small corpus
shards, one empty; a thread change re-runs nothing, a batch-size change re-runs only san (nothing
in fp32), an iteration change re-runs only san."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hardneg.shards import write_shard

ROOT = Path(__file__).resolve().parents[1]
TAG = "wiki1m_for_simcse-n24-ss12"
RULES = ["lexicon", "bootstrap_mlm", "san", "san_all"]


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.integration
def test_san_rules_end_to_end(tmp_path, tiny_mlm_dir, mirror_dir, shared_dir):
    src = next(mirror_dir.rglob("wiki1m_for_simcse.txt"))
    texts = [t for t in src.read_text(encoding="utf-8").splitlines()[:40] if len(t.split()) > 6][:11] + [""]
    corpus = tmp_path / "results/corpus" / TAG
    write_shard(pl.DataFrame({"id": pl.Series(range(12), dtype=pl.Int64), "text": texts}), corpus / "shard-000.parquet")
    empty = pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)})
    write_shard(empty, corpus / "shard-001.parquet")
    overlay = tmp_path / "small.yaml"
    overlay.write_text(
        "corpus:\n  max_sentences: 24\n  shard_size: 12\n"
        f"bootstrap_mlm:\n  base: {tiny_mlm_dir}\n  steps: 2\n  batch_size: 4\n  train_layers: 2\n  heldout_every: 4\n  heldout_max: 3\n"
        "san:\n  batch_size: 3\n"
        f"lexicon:\n  reference: {shared_dir / 'data/reference/san_vocab_pos_end.txt'}\n"
    )
    configs = ["--configfile", str(ROOT / "config.yaml"), str(ROOT / "experiments/tiny.yaml"), str(overlay)]
    run = smk(tmp_path, *configs, "--allowed-rules", *RULES, "--cores", "2", "san_all")
    assert run.returncode == 0, run.stderr[-4000:]

    san_dir = next((tmp_path / "results/augment/san" / TAG).iterdir())
    san = pl.read_parquet(san_dir / "shard-000.parquet")
    assert san["id"].to_list() == list(range(12)) and set(san["augmenter"]) == {"san"}
    assert {"san", "iter1", "iter4", "masked1", "masked4"} <= set(san.columns)
    assert san.row(11, named=True)["reason"] == "input:empty"
    stats = json.loads((san_dir / "shard-000.json").read_text())
    assert stats["rows"] == 12 == sum(stats["status"].values())
    assert stats["config"]["batch_size"] == 3  # san.batch_size reaches the script (a rule param)
    assert pl.read_parquet(san_dir / "shard-001.parquet").height == 0
    lex = next((tmp_path / "results/lexicon").iterdir()) / "lexicon.parquet.manifest.json"
    assert json.loads(lex.read_text())["reference_comparison"]["probe"]["the"]["reference"] == "PRON"
    boot = next((tmp_path / "results/mlm" / TAG).iterdir())
    assert "unigram_top1" in json.loads((boot / "metrics.json").read_text())["after"]
    assert (tmp_path / "logs/san").is_dir() and (tmp_path / "benchmarks/bootstrap_mlm").is_dir()

    # the inspect command reads the shard the workflow wrote
    shown = subprocess.run([sys.executable, "-m", "hardneg", "inspect", str(san_dir / "shard-000.parquet")],
                           capture_output=True, text=True, timeout=120, check=False)
    assert shown.returncode == 0 and "MER to the input" in shown.stdout, shown.stderr

    # threads do not change the output: nothing to do; batch size is keyed under precision auto
    # (bf16 on a GPU depends on it; hardneg.augment.san.key, fp32 case in test_gpu_speed): only san re-runs;
    # more iterations: only san re-runs
    th = tmp_path / "th.yaml"
    th.write_text("san:\n  threads: 1\n")
    again = smk(tmp_path, *configs, str(th), "--allowed-rules", *RULES, "-n", "san_all")
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
    bs = tmp_path / "bs.yaml"
    bs.write_text("san:\n  batch_size: 64\n")
    plan = smk(tmp_path, *configs, str(bs), "--allowed-rules", *RULES, "-n", "san_all")
    out = plan.stdout + plan.stderr
    assert plan.returncode == 0 and "rule san:" in out and "rule lexicon:" not in out, out[-3000:]
    k2 = tmp_path / "k2.yaml"
    k2.write_text("san:\n  iterations: 2\n")
    plan = smk(tmp_path, *configs, str(k2), "--allowed-rules", *RULES, "-n", "san_all")
    out = plan.stdout + plan.stderr
    assert plan.returncode == 0, out[-3000:]
    assert "rule san:" in out and "rule lexicon:" not in out and "rule bootstrap_mlm:" not in out

    # fp32: batch size and chunking are not keyed (hardneg.augment.san.key) and reach the script as
    # params derived from the output, which Snakemake's params trigger skips: changing them re-runs nothing
    fp = tmp_path / "fp32.yaml"
    fp.write_text("san:\n  precision: fp32\n")
    run = smk(tmp_path, *configs, str(fp), "--allowed-rules", *RULES, "--cores", "2", "san_all")
    assert run.returncode == 0, run.stderr[-4000:]
    fp_bs = tmp_path / "fp32-bs.yaml"
    fp_bs.write_text("san:\n  precision: fp32\n  batch_size: 5\n  chunk_rows: 7\n")
    again = smk(tmp_path, *configs, str(fp_bs), "--allowed-rules", *RULES, "-n", "san_all")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
