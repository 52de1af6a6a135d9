"""Faults through the workflow: a job SIGKILLed while it writes an augmentation shard
and while it writes a training checkpoint. The re-run gives byte-identical shards, and the
resumed training continues from the checkpoint with the same loss at every step as a run that
was never interrupted (CPU).

Faults are injected with ``HARDNEG_FAULT_KILL`` (hardneg.shards.io): the job kills itself with
SIGKILL once the matching output is fully written to its temp file but not yet renamed, the
widest window in which a kill can hit an output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _overlay(tmp: Path, tiny_mlm_dir: Path, mirror_dir: Path) -> Path:
    overlay = {
        "experiment": "fault", "mirror": str(mirror_dir),
        "lexicon": {"reference": str(mirror_dir.parent / "data/reference/san_vocab_pos_end.txt")},
        "corpus": {"max_sentences": 16, "shard_size": 8},
        "train": {"init_model": str(tiny_mlm_dir), "methods": ["simcse"], "seeds": [1], "gpus": 0,
                  "threads": 1,
                  "overrides": {"batch_size": 4, "max_steps": 6, "checkpoint_every": 2, "eval_every": 100,
                                "dev_max_pairs": 20, "show_progress": False, "pooler": "avg",
                                "mlp_only_train": False}},
    }
    path = tmp / "fault.yaml"
    path.write_text(yaml.safe_dump(overlay))
    return path


TRAIN = "results/train/fault/simcse/seed1/summary.json"


def smk(workdir: Path, overlay: Path, *targets: str, fault: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(ROOT / "config.yaml"), str(ROOT / "experiments/tiny.yaml"), str(overlay),
           "--cores", "2", *targets]
    env = dict(os.environ)
    env.pop("HARDNEG_FAULT_KILL", None)
    if fault:
        env["HARDNEG_FAULT_KILL"] = fault
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False, env=env)


def negation_targets(workdir: Path, overlay: Path) -> list[str]:
    """The negation shards of this config (their folder is keyed by a settings hash)."""
    dry = smk(workdir, overlay, "osscse_all", "-n")
    return sorted(set(re.findall(r"results/augment/negation/\S+?/shard-\d+\.parquet", dry.stdout + dry.stderr)))


def _outputs(workdir: Path) -> dict[str, bytes]:
    neg = workdir / "results/augment/negation"
    return {str(p.relative_to(workdir)): p.read_bytes() for p in sorted(neg.rglob("*")) if p.is_file()}


def _train_rows(workdir: Path) -> list[dict]:
    lines = (workdir / "results/train/fault/simcse/seed1/metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(x).items() if k != "sent_per_s"} for x in lines]


@pytest.mark.integration
def test_kill_during_shard_and_checkpoint_writes(tmp_path, tiny_mlm_dir, mirror_dir):
    clean, faulty = tmp_path / "clean", tmp_path / "faulty"
    clean.mkdir(), faulty.mkdir()
    overlay = _overlay(tmp_path, tiny_mlm_dir, mirror_dir)

    neg = negation_targets(clean, overlay)
    assert len(neg) == 2, neg
    ref = smk(clean, overlay, *neg, TRAIN)
    assert ref.returncode == 0, ref.stderr[-4000:]
    expected = _outputs(clean)
    assert any(k.endswith("shard-000.parquet") for k in expected)

    # 1. the negation job dies while writing its shard: no file under the final name
    run = smk(faulty, overlay, *neg, fault="*results/augment/negation/*/shard-000.parquet")
    assert run.returncode != 0
    written = _outputs(faulty)
    assert not any(k.endswith("/shard-000.parquet") for k in written)
    assert any(Path(k).name.startswith(".shard-000.parquet.") for k in written)  # the temp file

    # 2. the training job dies while writing its second checkpoint (step 4 of 6)
    run = smk(faulty, overlay, TRAIN, fault="*/last.pt#2")
    assert run.returncode != 0
    assert not (faulty / TRAIN).exists()

    # 3. the plain re-run finishes both
    run = smk(faulty, overlay, *neg, TRAIN)
    assert run.returncode == 0, run.stderr[-4000:]
    assert _outputs(faulty) == expected  # byte-identical, and the stale temp file is gone
    log = (faulty / "logs/train/fault/simcse/seed1.log").read_text()
    assert "at step 2" in log  # resumed from the surviving checkpoint, not from scratch
    assert _train_rows(faulty) == _train_rows(clean)  # same loss at every step
