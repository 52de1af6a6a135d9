"""Pre-flight checks (a request the cluster lacks) and failure diagnosis (time limit, sbatch
rejection) on real-format sinfo / snakemake text; the profiles parse and name real rules."""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from hardneg.cluster.slurm import (
    PlannedJob,
    check_requests,
    diagnose_log,
    parse_dryrun,
    parse_sinfo,
    parse_timelimit,
)

REPO = Path(__file__).resolve().parents[1]

SINFO = "debug*|2|21695|gpu:2|1:00:00\nlong|64|512000|gpu:a100:4(S:0-1)|2-00:00:00\n"
DRYRUN = """
localrule download:
    output: data/downloads/x
    resources: tmpdir=/tmp

rule train:
    input: a
    jobid: 3
    threads: 2
    resources: tmpdir=/tmp, gpu=1, runtime=600, mem_mb=32000, mem=32 GB, cpus_per_task=1

rule negate:
    jobid: 4
    resources: tmpdir=/tmp, mem_mb=2000, runtime=60, slurm_partition=debug

rule all:
    input: b
"""


def test_parse_sinfo_and_timelimits():
    parts = {p.name: p for p in parse_sinfo(SINFO)}
    assert parts["debug"].default and parts["debug"].gpus == 2 and parts["debug"].max_minutes == 60
    assert parts["long"].gpus == 4 and parts["long"].max_minutes == 2880
    assert parse_timelimit("infinite") == math.inf and parse_timelimit("30:00") == 30


def test_requests_the_cluster_lacks_are_named_with_the_fix():
    jobs = parse_dryrun(DRYRUN)
    assert [j.rule for j in jobs] == ["train", "negate"]  # localrule and all skipped
    problems = check_requests(jobs, parse_sinfo(SINFO))
    text = "\n".join(problems)
    assert "rule train: mem_mb=32000 but partition 'debug' offers at most 21695" in text
    assert re.search(r"rule train: runtime=600 .* PENDING \(PartitionTimeLimit\)", text)
    assert "--set-resources train:runtime=<value>" in text
    assert "negate" not in text  # fits
    # The same job on the big partition fits.
    jobs[0].resources["slurm_partition"] = "long"
    assert check_requests(jobs[:1], parse_sinfo(SINFO)) == []
    missing = check_requests([PlannedJob("x", resources={"slurm_partition": "gpu"})], parse_sinfo(SINFO))
    assert "partition 'gpu' does not exist" in missing[0]


def test_diagnose_time_limit_and_sbatch_rejection():
    log = """[Sat Nov 21 19:42:37 2026]
Error in rule train:
    message: SLURM-job '12' failed, SLURM status is: 'TIMEOUT'. Detailed failure reason unavailable.
    jobid: 5
    log: logs/train/q/simcse/seed42.log, .snakemake/slurm_logs/rule_train/12.log (check log file(s) for error details)
    external_jobid: 12

Error in rule san:
    message: SLURM sbatch failed. The error message was 'sbatch: error: Batch job submission failed: Requested node configuration is not available'.
    jobid: 7

Exiting because a job execution failed.
"""
    lines = diagnose_log(log)
    assert lines[0].startswith("rule train (Slurm job 12) was killed by the scheduler's time limit")
    assert "--set-resources train:runtime=<minutes>" in lines[0]
    assert lines[1].startswith("rule san was rejected by sbatch (sbatch: error: Batch job submission")
    assert lines[-1].startswith("Resume: re-run the same snakemake command")
    assert diagnose_log("Finished job 3.\n") == []


def test_profiles_name_existing_rules():
    rules = set()
    for smk in (REPO / "rules").glob("*.smk"):
        rules |= set(re.findall(r"^rule (\w+):", smk.read_text(), flags=re.MULTILINE))
    slurm = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert slurm["executor"] == "slurm"
    assert set(slurm["set-resources"]) <= rules, set(slurm["set-resources"]) - rules
    local = yaml.safe_load((REPO / "profiles/local/config.yaml").read_text())
    assert any(r.startswith("gpu=") for r in local["resources"])
