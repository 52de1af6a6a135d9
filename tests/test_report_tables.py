"""Report tables from synthetic result files: mean ± std over seeds, Cont./Oppn., curves,
augmentation counts that add up, benchmarks; deterministic summary bytes; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from hardneg.report import collect
from hardneg.report.build import OUTPUTS, build_report
from hardneg.shards import write_shard


def _sts(root: Path, method: str, seed: int, values: dict) -> Path:
    p = root / "results/eval/exp" / method / f"seed{seed}" / "sts.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    data = {k: {"spearman": v, "n": 10} for k, v in values.items()}
    data["avg"] = {"spearman": sum(values.values()) / len(values), "datasets": list(values)}
    p.write_text(json.dumps(data))
    return p


@pytest.fixture
def results(tmp_path):
    sts = [
        _sts(tmp_path, "simcse", 1, {"STS12": 60.0, "STSBenchmark": 70.0}),
        _sts(tmp_path, "simcse", 2, {"STS12": 62.0, "STSBenchmark": 74.0}),
        _sts(tmp_path, "baseline", 0, {"STS12": 50.0, "STSBenchmark": 55.0}),
    ]
    co = []
    for method, seed in (("simcse", 1), ("baseline", 0)):
        p = sts[0].parents[2] / method / f"seed{seed}" / "cont_oppn.json"
        p.write_text(json.dumps({"groups": {"STS13-headlines": {
            "cont": {"spearman": 80.0, "n": 5}, "oppn": {"spearman": 40.0, "n": 5}}},
            "weighted_average": {"cont": 80.0, "oppn": 40.0}}))
        co.append(p)
    m = tmp_path / "results/train/exp/simcse/seed1/metrics.jsonl"
    m.parent.mkdir(parents=True)
    m.write_text("\n".join(json.dumps(r) for r in [
        {"kind": "eval", "step": 0, "stsb_dev": 50.0}, {"kind": "train", "step": 1, "loss": 2.0},
        {"kind": "train", "step": 2, "loss": 1.5}, {"kind": "eval", "step": 2, "stsb_dev": 60.0}]) + "\n")
    aug = tmp_path / "results/augment/negation/c/k/shard-000.parquet"
    write_shard(pl.DataFrame({
        "id": [0, 1, 2], "text": ["a b c", "it is", "x"], "status": ["ok", "ok", "dropped"],
        "reason": [None, None, "too short"], "augmenter": ["negation"] * 3,
        "negation": ["a b not c", "it is not", None], "rule": ["aux", "aux", None]}), aug)
    empty = tmp_path / "results/augment/negation/c/k/shard-001.parquet"
    write_shard(pl.DataFrame(schema={"id": pl.Int64, "text": pl.String, "status": pl.String,
                                     "reason": pl.String, "augmenter": pl.String,
                                     "negation": pl.String}), empty)
    bench = tmp_path / "benchmarks/train/exp/simcse/seed1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                     "12.5\t0:00:12\t800.1\t900\t700\t750\t1\t2\t95.0\t11.0\n")
    return {"sts": sts, "cont_oppn": co, "metrics": [m], "augment": [aug, empty],
            "bench_dir": tmp_path / "benchmarks"}


def test_sts_mean_and_std_over_seeds(results):
    long = collect.sts_long(results["sts"])
    assert long.height == 9
    table = collect.sts_summary(long)
    assert table["method"].to_list() == ["baseline", "simcse"]  # baseline first
    row = table.row(1, named=True)
    assert row["STS12"] == "61.0 ± 1.41"  # mean 61, sample std sqrt(2)
    assert row["STSBenchmark"] == "72.0 ± 2.83"
    assert row["seeds"] == 2
    assert table.columns[:4] == ["method", "STS12", "STSBenchmark", "avg"]
    assert table.row(0, named=True)["STS12"] == "50.0 ± 0.0"  # one seed: std 0


def test_augmentation_counts_add_up(results):
    stats, ex = collect.augmentation_summary(results["augment"], examples=5)
    assert stats["rows"].sum() == 3
    dropped = stats.filter(pl.col("status") == "dropped").row(0, named=True)
    assert dropped["reason"] == "too short" and dropped["rows"] == 1
    assert ex["augmented"].to_list() == ["a b not c", "it is not"]


def test_build_report_writes_everything_deterministically(results, tmp_path):
    a = build_report(tmp_path / "a", experiment="exp", **results)
    b = build_report(tmp_path / "b", experiment="exp", **results)
    assert set(a) == set(OUTPUTS)
    for name in OUTPUTS:
        assert a[name].stat().st_size > 0, name
    assert a["summary.json"].read_bytes() == b["summary.json"].read_bytes()
    assert a["sts.png"].read_bytes() == b["sts.png"].read_bytes()
    html = a["sts.html"].read_text()
    assert 'id="sts-summary"' in html and "61.0 ± 1.41" in html
    assert "too short" in a["augmentation.html"].read_text()
    bench = a["benchmarks.html"].read_text()
    assert "train" in bench and "12.50" in bench and "800.10" in bench
    summary = json.loads(a["summary.json"].read_text())
    assert summary["runs"] == ["baseline/seed0", "simcse/seed1", "simcse/seed2"]


def test_bad_inputs_name_the_file(tmp_path):
    bad = tmp_path / "x" / "sts.json"
    bad.parent.mkdir()
    bad.write_text("{}")
    with pytest.raises(ValueError, match="seed<N>"):
        collect.sts_long([bad])
    p = tmp_path / "e/m/seed1/sts.json"
    p.parent.mkdir(parents=True)
    p.write_text("{not json")
    with pytest.raises(ValueError, match=r"e/m/seed1/sts.json: invalid JSON"):
        collect.sts_long([p])
    m = tmp_path / "e/m/seed1/metrics.jsonl"
    m.write_text('{"step": 1}\n{oops\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl:2"):
        collect.training_curves([m])
