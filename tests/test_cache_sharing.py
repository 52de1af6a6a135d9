"""Sharing across experiments and re-run rules:
- augmentation outputs are keyed by their parameters, so an experiment that changes only
  training knobs re-uses every augmentation shard, while a SAN knob re-makes only SAN shards;
- a change to library code re-runs the rule that uses it (code_version params);
- `--forcerun RULE` and `--until RULE` re-run exactly one rule (and what depends on it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tinyrun import TINY_SCHEDULING

from hardneg.cluster.workdir import link_workflow

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TINY = ["--configfile", "config.yaml", "experiments/tiny.yaml"]
AUGMENT_RULES = {"prepare_corpus", "lexicon", "bootstrap_mlm", "san", "negate", "backtranslate",
                 "select_paraphrase"}

# Idle: each test is at most three dry runs (~10 CPU-s each, measured on a busy 2-core machine)
# and one select_paraphrase job; the augmentation outputs come from the fixture, not charged here.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600, func_only=True)]
# A snapshot (not links) of the workflow and library: the test edits library code, and rules and
# library must stay consistent with each other while the test runs.
SNAPSHOT = ("src", "rules", "Snakefile", "workflow", "schemas", "config.yaml", "experiments")


def smk(workdir: Path, *args: str, limit: int = 1800) -> str:
    proc = subprocess.run(["timeout", "-k", "10", str(limit), SNAKEMAKE, *args], cwd=workdir,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


def planned_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """rule -> job count of a dry run (Snakemake's 'Job stats' table)."""
    out = smk(workdir, "-n", *args, limit=180)
    if "Nothing to be done" in out:
        return {}
    table = out[out.index("Job stats:"):]
    jobs = {}
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not m or m[1] == "total":
            break
        jobs[m[1]] = int(m[2])
    return jobs


# What the fixture takes from the session's tiny run: the inputs and outputs of every rule up to
# the augmenters with Snakemake's records of them (mtimes kept), not the models or evaluations.
_SHARED_OUTPUTS = ("data", "results", "logs", "benchmarks", ".snakemake/metadata")
_NOT_SHARED = ("train", "eval", "report", "ablations")


@pytest.fixture(scope="module")
def augmented(tiny_local, tmp_path_factory) -> Path:
    """A work directory (own copy of the workflow and src/, so library edits stay local) where the tiny
    experiment's augmentation shards exist: copied from the session's tiny run, then every rule up
    to the augmenters run for real, which does nothing when the copy is complete and current."""
    wd = link_workflow(REPO, tmp_path_factory.mktemp("cache") / "main", copy=SNAPSHOT)
    targets = smk(wd, *TINY, "--list-target-rules", limit=120)  # sanity: workflow parses here
    assert "all" in targets
    for item in _SHARED_OUTPUTS:
        if (tiny_local / item).is_dir():
            shutil.copytree(tiny_local / item, wd / item, symlinks=True, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if Path(d).name == "results"
                                                     and n in _NOT_SHARED])
    smk(wd, *TINY, *TINY_SCHEDULING, "--until", "san", "select_paraphrase", "negate")
    return wd


def _overlay(wd: Path, name: str, data: dict) -> str:
    path = wd / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path.name


def test_training_only_change_reuses_every_augmentation_shard(augmented):
    wd = augmented
    shards = sorted(p for p in (wd / "results/augment").rglob("shard-*.parquet"))
    assert shards, "the fixture made no augmentation shards"
    mtimes = {p: p.stat().st_mtime_ns for p in shards}
    # A second experiment: new name, other training knobs (tau2, lr, seeds), same augmentation.
    ov = _overlay(wd, "other", {"experiment": "tiny-other", "train": {
        "seeds": [1, 2], "presets": {"simcse_san": {"tau2": 0.1}}, "overrides": {"lr": 2.0e-5}}})
    jobs = planned_jobs(wd, *TINY, ov)
    methods = yaml.safe_load((wd / "experiments/tiny.yaml").read_text())["train"]["methods"]
    # every method x 2 new seeds trains (teachers included), each is evaluated; nothing else
    assert jobs.get("train") == 2 * len(methods) and jobs.get("evaluate", 0) >= 2 * len(methods), jobs
    assert not AUGMENT_RULES & set(jobs), f"augmentation would re-run: {jobs}"
    # The same experiment's own DAG agrees: nothing upstream of training is stale.
    assert not AUGMENT_RULES & set(planned_jobs(wd, *TINY)), "tiny itself re-runs augmentation"
    assert {p: p.stat().st_mtime_ns for p in shards} == mtimes


def test_augmentation_knob_remakes_only_its_own_shards(augmented):
    ov = _overlay(augmented, "iters", {"experiment": "tiny-iter2", "san": {"iterations": 2}})
    jobs = planned_jobs(augmented, *TINY, ov)
    assert jobs.get("san") == 2, jobs  # one per corpus shard, new parameter key
    assert not {"negate", "backtranslate", "select_paraphrase", "lexicon", "prepare_corpus"} & set(jobs), jobs


def test_library_change_reruns_the_rule(augmented):
    module = augmented / "src/hardneg/augment/negation/negate.py"
    before = planned_jobs(augmented, *TINY, "--until", "negate")
    assert "negate" not in before, before
    original = module.read_text()
    try:
        module.write_text(original + "\n# a library change\n")
        after = smk(augmented, *TINY, "-n", "--until", "negate", limit=180)
        assert re.search(r"rule negate:", after), after[-2000:]
        assert "params" in after.lower()  # the reason: code_version param changed
        # Other augmenters' code did not change: they stay done.
        assert "rule san:" not in after and "rule backtranslate:" not in after
    finally:
        module.write_text(original)


def test_forcerun_and_until_rerun_one_rule(augmented):
    jobs = planned_jobs(augmented, *TINY, "--forcerun", "select_paraphrase", "--until",
                        "select_paraphrase")
    assert jobs == {"select_paraphrase": 2}, jobs
    # Really re-run it: only that rule executes, the shards it makes are rewritten.
    out = smk(augmented, *TINY, *TINY_SCHEDULING, "--forcerun", "select_paraphrase", "--until",
              "select_paraphrase", limit=300)
    ran = set(re.findall(r"^(?:local)?rule (\w+):", out, flags=re.MULTILINE))
    assert ran == {"select_paraphrase"}, ran
