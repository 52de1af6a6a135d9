"""The OssCSE rules run for real by Snakemake (negate, backtranslate, select_paraphrase) on two
small corpus shards, one of them empty; a changed MER window re-runs only the selection."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hardneg.shards import write_shard

ROOT = Path(__file__).resolve().parents[1]
TAG = "wiki1m_for_simcse-n20-ss10"
RULES = ["negate", "backtranslate", "select_paraphrase", "osscse_all"]


def smk(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(workdir),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.integration
def test_osscse_rules_end_to_end(tmp_path):
    corpus = tmp_path / "results/corpus" / TAG
    texts = [
        "My dog likes eating sausage.",
        "The committee approved the new budget after a long debate.",
        "He is a doctor.",
        "Annual report 2020",
        "They did not go home.",
        "",
        "Он пошёл домой.",
        "The cat was sleeping on the mat, and nobody cared.",
        "Is the museum open on Sundays?",
        "She has written three novels since 2010.",
    ]
    write_shard(pl.DataFrame({"id": list(range(10)), "text": texts}), corpus / "shard-000.parquet")
    empty = pl.DataFrame(
        {"id": pl.Series([], dtype=pl.Int64), "text": pl.Series([], dtype=pl.String)}
    )
    write_shard(empty, corpus / "shard-001.parquet")  # a shard may be empty
    overlay = tmp_path / "small.yaml"
    overlay.write_text("corpus:\n  max_sentences: 20\n  shard_size: 10\n")
    configs = [
        "--configfile",
        str(ROOT / "config.yaml"),
        str(ROOT / "experiments/tiny.yaml"),
        str(overlay),
    ]

    # Only this stage's rules may run: the corpus shards above are its inputs.
    run = smk(tmp_path, *configs, "--allowed-rules", *RULES, "--cores", "2", "osscse_all")
    assert run.returncode == 0, run.stderr[-4000:]

    neg_dir = next((tmp_path / "results/augment/negation" / TAG).iterdir())
    neg = pl.read_parquet(neg_dir / "shard-000.parquet")
    assert neg["id"].to_list() == list(range(10))
    got = dict(zip(neg["text"], neg["negation"]))
    assert got["My dog likes eating sausage."] == "My dog does not like eating sausage."
    assert got["They did not go home."] == "They did go home."
    assert got["Is the museum open on Sundays?"] == "Is not the museum open on Sundays?"  # SNCSE
    summary = json.loads((neg_dir / "shard-000.json").read_text())
    assert summary["rules"] == "sncse" and summary["extra_negators"] == []  # what made the shard
    from hardneg.augment.negation.negate import shard_provenance

    assert shard_provenance(neg_dir / "shard-000.parquet")["rules"] == "sncse"
    assert summary["status"] == {"dropped": 1, "ok": 9} and summary["reason"] == {"empty": 1}
    assert summary["rows"] == 10 == sum(summary["status"].values())
    assert pl.read_parquet(neg_dir / "shard-001.parquet").height == 0

    bt_dir = next((tmp_path / "results/augment/backtranslation" / TAG).iterdir())
    bt = pl.read_parquet(bt_dir / "shard-000.parquet")
    assert bt["id"].to_list() == list(range(10))
    assert set(bt["status"]) <= {"ok", "dropped"}
    assert bt.filter(pl.col("status") == "dropped")["reason"].null_count() == 0
    ok = bt.filter(pl.col("status") == "ok")
    assert ok.height >= 3
    assert ok["paraphrase_mer"].min() >= 0.15 and ok["paraphrase_mer"].max() <= 0.6
    assert all(len(c) == 1 and c[0]["pivot"] == "spa" for c in bt["candidates"].to_list() if c)
    assert bt.row(5, named=True)["reason"] == "empty"
    assert (tmp_path / "logs/negate").is_dir() and (tmp_path / "benchmarks/backtranslate").is_dir()

    # A new MER window re-runs only the selection (negations and candidates are reused).
    window = tmp_path / "window.yaml"
    window.write_text("paraphrase:\n  mer_max: 0.5\n")
    configs2 = configs + [str(window)]
    dry = smk(tmp_path, *configs2, "--allowed-rules", *RULES, "-n", "osscse_all")
    assert dry.returncode == 0, dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    assert (
        "select_paraphrase" in out
        and "rule backtranslate:" not in out
        and "rule negate:" not in out
    )
