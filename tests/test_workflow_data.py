"""The workflow's data stage, run for real by Snakemake over loopback HTTP; lint; full dry run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from httpmirror import serve

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
CONFIGS = ["--configfile", str(ROOT / "config.yaml"), str(ROOT / "experiments" / "tiny.yaml")]


def smk(workdir: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.integration
def test_data_stage_over_http_then_nothing_to_do(tmp_path, mirror_dir):
    targets = ["data/senteval", "results/corpus/wiki1m_for_simcse-n300-ss150/manifest.json"]
    with serve(mirror_dir) as (base, handler):
        run = smk(tmp_path, *CONFIGS, "--config", f"mirror={base}", "--cores", "2", *targets)
        assert run.returncode == 0, run.stderr[-3000:]
        fetched = {p for p, _ in handler.hits}
        again = smk(tmp_path, *CONFIGS, "--config", f"mirror={base}", "--cores", "2", "-n",
                    *targets)
    assert any(p.endswith("/senteval.tar") for p in fetched)
    assert any(p.endswith("/wiki1m_for_simcse.txt") for p in fetched)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    corpus = tmp_path / "results/corpus/wiki1m_for_simcse-n300-ss150"
    manifest = json.loads((corpus / "manifest.json").read_text())
    assert manifest["kept"] == 300
    assert manifest["kept"] + manifest["dropped_total"] == manifest["lines_read"]
    shards = [pl.read_parquet(corpus / f"shard-{i:03d}.parquet") for i in range(2)]
    assert [s.height for s in shards] == [150, 150]
    assert shards[0]["id"].is_sorted() and shards[0]["id"][0] == 0
    dl = json.loads((tmp_path / "data/downloads/senteval.tar.manifest.json").read_text())
    assert dl["source"].startswith(base) and len(dl["sha256"]) == 64
    assert (tmp_path / "data/senteval/STS/STSBenchmark/sts-test.csv").is_file()
    assert (tmp_path / "logs/prepare_corpus").is_dir()


@pytest.mark.integration
def test_unreachable_mirror_fails_cleanly(tmp_path):
    overlay = tmp_path / "no-retries.yaml"
    overlay.write_text("mirror: http://127.0.0.1:9\ndata:\n  retries: 1\n  backoff_s: 0\n")
    run = smk(tmp_path, *CONFIGS, str(overlay), "--cores", "1", "data/downloads/senteval.tar")
    assert run.returncode != 0
    log = (tmp_path / "logs/download/senteval.tar.log").read_text()
    assert "could not download https://huggingface.co/" in log
    assert "via http://127.0.0.1:9/datasets/" in log
    assert "Traceback" not in log  # one clear line, not a deep traceback
    assert not (tmp_path / "data/downloads/senteval.tar").exists()


@pytest.mark.integration
def test_config_typo_is_reported_with_key_path(tmp_path):
    run = smk(tmp_path, *CONFIGS, "--config", "corpus={'max_sentences': 10, 'shard_size': 5,"
              " 'dedup': True}", "-n")
    assert run.returncode != 0
    assert "unknown key 'corpus.dedup'" in run.stdout + run.stderr


@pytest.mark.integration
def test_lint_and_full_dag_dry_runs(tmp_path):
    lint = subprocess.run([*SNAKEMAKE, "--lint"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]
    for configs in ([], ["--configfile", str(ROOT / "config.yaml"),
                         str(ROOT / "experiments" / "quick.yaml")], CONFIGS):
        # In the repository itself: configs name ../shared paths relative to it, as users run it.
        dry = subprocess.run([*SNAKEMAKE, *configs, "-n", "--forceall", "--nolock", "--quiet",
                              "rules"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
        assert dry.returncode == 0, dry.stderr[-3000:]
        planned = dry.stdout + dry.stderr
        for rule in ("download", "prepare_corpus", "lexicon", "san", "negate", "backtranslate",
                     "select_paraphrase", "train", "evaluate", "cont_oppn_splits", "probe",
                     "report_tables"):
            assert rule in planned, f"{rule} missing from the planned DAG"
