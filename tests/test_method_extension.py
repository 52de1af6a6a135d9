"""A method defined outside the package (tests/methods/uniformity.py, named in train.method_modules
by the overlay tests/methods/own_method.yaml) is trained, evaluated and listed in the report by the
tiny workflow, on top of the session's tiny run (its results hard-linked: only the new method's
jobs and the report run)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from tinyrun import REPO, SNAKEMAKE, TINY, run

from hardneg.cluster.workdir import link_workflow

pytestmark = pytest.mark.integration

OWN = REPO / "tests/methods/own_method.yaml"


# Idle: one 2-step train job, its evaluation and the report on top of the tiny run (the fixture's,
# not charged here): about a minute on 2 idle cores.
@pytest.mark.timeout(900, func_only=True)
def test_own_method_trains_evaluates_and_is_reported(tiny_local, tmp_path):
    wd = link_workflow(REPO, tmp_path / "own")
    (wd / "tests").mkdir()  # a linked work dir leaves tests/ out: the overlay names the module there
    (wd / "tests/methods").symlink_to(REPO / "tests/methods")
    # hard links: a re-run job deletes its old outputs first, so the shared tiny run stays as it was
    for item in ("results", "data"):
        subprocess.run(["cp", "-al", str(tiny_local / item), str(wd / item)], check=True)
    for item in ("logs", "benchmarks"):  # small, and a log may be appended to: copies
        if (tiny_local / item).exists():
            shutil.copytree(tiny_local / item, wd / item, symlinks=True)
    shutil.copytree(tiny_local / ".snakemake", wd / ".snakemake", symlinks=True)
    dry = run([SNAKEMAKE, *TINY, str(OWN), "--cores", "2", "-n", "--quiet", "rules"], wd)
    planned = dry.stdout + dry.stderr
    assert "train " in planned and "report_tables " in planned, planned
    run([SNAKEMAKE, *TINY, str(OWN), "--cores", "2"], wd, limit=900)

    run_dir = wd / "results/train/tiny/simcse_uniformity/seed42"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["method"] == "simcse_uniformity" and summary["steps"] == 2
    assert summary["settings"]["method_settings"] == {"uniformity": {"weight": 0.1, "t": 2.0}}
    assert summary["settings"]["method_modules"] == ["tests/methods/uniformity.py"]
    train_rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all("uniformity" in r and "infonce" in r for r in train_rows if r["kind"] == "train")
    sts = json.loads((wd / "results/eval/tiny/simcse_uniformity/seed42/sts.json").read_text())
    assert sts
    html = (wd / "results/report/tiny/sts.html").read_text()
    assert '<a href="https://arxiv.org/abs/2005.10242"' in html and "simcse_uniformity" in html
    assert "SimCSE&#x27;s setting + 0.1 x uniformity" in html or "SimCSE's setting + 0.1 x uniformity" in html
