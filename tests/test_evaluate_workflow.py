"""The `cont_oppn_splits`, `evaluate` (method baseline) and `evaluate_plots` rules, run for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest


@pytest.mark.integration
def test_evaluate_rules_end_to_end(tmp_path, repo_root, mirror_dir, tiny_mlm_dir):
    overlay = tmp_path / "overlay.yaml"
    # the tiny MLM folder as the "untrained start encoder" keeps this fast; 20 pairs per dataset
    overlay.write_text(
        f"evaluate:\n  baseline_model: {tiny_mlm_dir}\n  baseline_pooler: avg_top2\n  max_pairs: 20\n"
    )
    work = tmp_path / "run"
    base = "results/eval/tiny/baseline/seed0"
    targets = [f"{base}/plots/cont_oppn.png", f"{base}/plots/hard_pairs.png"]
    cmd = [str(Path(sys.executable).parent / "snakemake"), "-s", str(repo_root / "Snakefile"), "-d", str(work),
           "--configfile", str(repo_root / "config.yaml"), str(repo_root / "experiments/tiny.yaml"), str(overlay),
           "--config", f"mirror={mirror_dir}", "--cores", "2", *targets]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sts = json.loads((work / base / "sts.json").read_text())
    assert all(sts[d]["n"] == 20 for d in ("STS12", "STS16", "STSBenchmark", "SICKRelatedness"))
    pred = pl.read_parquet(work / base / "predictions.parquet")
    assert pred.height == 7 * 20 and pred["mer"].is_not_null().all()
    cont = json.loads((work / base / "cont_oppn.json").read_text())
    assert cont["model"]["pooler"] == "avg_top2" and set(cont["weighted_average"]) == {"cont", "oppn"}
    stats = list((work / "results/eval/splits").glob("*/stats.json"))
    assert len(stats) == 1 and json.loads(stats[0].read_text())["groups"]["STS2012-MSRvid"]["cont"] == 406
    assert (work / "logs/evaluate/tiny/baseline/seed0.log").exists()
    assert (work / "benchmarks/evaluate/tiny/baseline/seed0.tsv").exists()
    # nothing to do on a second run (outputs cached)
    again = subprocess.run(cmd[:-len(targets)] + ["-n", *targets], capture_output=True, text=True, timeout=120,
                           check=False)
    assert "Nothing to be done" in again.stdout + again.stderr
