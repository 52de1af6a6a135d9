"""``hardneg slurm-check`` (do the planned jobs fit the cluster?) and ``hardneg slurm-diagnose``
(why did the last run fail, and how to resume)."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path


def _check(args: argparse.Namespace) -> int:
    from hardneg.cluster.slurm import check_requests, cluster_partitions, parse_dryrun

    snakemake = str(Path(sys.executable).with_name("snakemake"))
    cmd = [snakemake, "-n", "--profile", args.profile, *shlex.split(args.snakemake)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=args.root, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    jobs = parse_dryrun(proc.stdout + proc.stderr)
    problems = check_requests(jobs, cluster_partitions(), local_rules=args.local_rules.split(","))
    for p in problems:
        print(p)
    if not problems:
        print(f"ok: {len(jobs)} planned jobs fit the cluster's partitions")
    return 1 if problems else 0


def _diagnose(args: argparse.Namespace) -> int:
    from hardneg.cluster.slurm import diagnose_log, latest_log

    log = Path(args.log) if args.log else latest_log(args.root)
    lines = diagnose_log(log.read_text(errors="replace"))
    print(f"{log}:")
    print("\n".join(lines) if lines else "no failed rule in this log")
    return 1 if lines else 0


def register(subparsers) -> None:
    c = subparsers.add_parser(
        "slurm-check", help="check that every planned job's resources fit the Slurm cluster",
        description="Runs snakemake -n with the profile, compares each job's cpus/mem/gpu/runtime "
                    "with sinfo's partitions, and names every rule whose request cannot be met.")
    c.add_argument("--profile", default="profiles/slurm")
    c.add_argument("--snakemake", default="", metavar="ARGS",
                   help="more snakemake options, e.g. \"--configfile config.yaml experiments/quick.yaml\"")
    c.add_argument("--local-rules", default="",
                   help="more rules to skip (comma-separated); localrules are skipped already")
    c.add_argument("--root", default=".")
    c.set_defaults(func=_check)
    d = subparsers.add_parser(
        "slurm-diagnose", help="explain the failed rules of the last run and how to resume")
    d.add_argument("--log", help="a Snakemake log (default: the newest in .snakemake/log)")
    d.add_argument("--root", default=".")
    d.set_defaults(func=_diagnose)
