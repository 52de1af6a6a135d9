"""Benchmark: sharing across experiments, side by side with the naive way in one run.

- Ablation families: the augmentation jobs (corpus, lexicon, MLM bootstrap, SAN, negation,
  back-translation, paraphrase selection) that Snakemake plans for all variants of a family when
  outputs are keyed by parameters (what this workflow does: a job is shared by every variant with
  the same parameters), vs keyed by experiment (naive: every variant re-makes its own). Counted
  from dry runs, so it is exact and takes seconds; with --bench-dir (the benchmarks/ folder of a
  finished run of the same base) the jobs are weighted by their measured wall seconds.
- --slurm: the tiny workflow's wall time run locally vs through profiles/slurm on a one-node
  cluster started by tools/slurm/start.sh (submission + polling overhead); needs root; minutes.

    .venv/bin/python bench/cluster.py [--base experiments/tiny.yaml] [--bench-dir DIR] [--slurm]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hardneg.cluster.ablate import list_families, load_family
from hardneg.cluster.workdir import link_workflow
from hardneg.config import load_config
from hardneg.report.collect import benchmarks_table

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
AUGMENT = ("prepare_corpus", "lexicon", "bootstrap_mlm", "san", "negate", "backtranslate",
           "select_paraphrase")


def planned_outputs(wd: Path, configfiles: list[str]) -> dict[str, set[str]]:
    """rule -> output files of every job a dry run plans (nothing exists yet)."""
    proc = subprocess.run([SNAKEMAKE, "-n", "--configfile", *configfiles], cwd=wd,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    out: dict[str, set[str]] = defaultdict(set)
    rule = None
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(("rule ", "localrule ")) and line.rstrip().endswith(":"):
            rule = line.split()[1].rstrip(":")
        elif rule and line.strip().startswith("output:"):
            out[rule].add(line.split(":", 1)[1].strip())
    return out


def seconds_per_job(bench_dir: Path | None) -> dict[str, float]:
    if not bench_dir or not bench_dir.exists():
        return {}
    b = benchmarks_table(bench_dir)
    return {r: float(s) for r, s in b.group_by("rule").agg(b["seconds"].mean()).iter_rows()}


def bench_sharing(base: list[str], bench_dir: Path | None) -> list[str]:
    base_exp = load_config([ROOT / b for b in base])["experiment"]
    secs = seconds_per_job(bench_dir)
    rows = [("| family | variants | augmentation jobs, keyed by parameters (this workflow) | "
             "keyed by experiment (naive) | saved | est. seconds shared vs naive |"),
            "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        wd = link_workflow(ROOT, Path(tmp) / "main")
        for family in list_families(ROOT):
            variants = load_family(family, base_exp, ROOT)
            union: dict[str, set[str]] = defaultdict(set)
            naive: dict[str, int] = defaultdict(int)
            t0 = time.perf_counter()
            for v in variants:
                ov = wd / f"{v.name}.yaml"
                import yaml

                ov.write_text(yaml.safe_dump(v.overlay))
                for rule, outs in planned_outputs(wd, [*base, ov.name]).items():
                    if rule in AUGMENT:
                        union[rule] |= outs
                        naive[rule] += len(outs)
            shared_n, naive_n = sum(len(s) for s in union.values()), sum(naive.values())
            est = ""
            if secs:
                s_sh = sum(len(union[r]) * secs.get(r, 0.0) for r in union)
                s_nv = sum(naive[r] * secs.get(r, 0.0) for r in naive)
                est = f"{s_sh:.0f} s vs {s_nv:.0f} s"
            detail = ", ".join(f"{r} {len(union[r])}/{naive[r]}" for r in AUGMENT if naive.get(r))
            rows.append(f"| {family} | {len(variants)} | {shared_n} | {naive_n} | "
                        f"{1 - shared_n / max(naive_n, 1):.0%} ({detail}) | {est} |")
            print(f"{family}: dry runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return rows


def bench_slurm(base: list[str]) -> list[str]:
    rows = ["| run of the tiny workflow | wall seconds |", "|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HARDNEG_SLURM_DIR=f"{tmp}/slurm", HARDNEG_SLURM_PORT="27817")
        local = link_workflow(ROOT, Path(tmp) / "a" / "main")
        t0 = time.perf_counter()
        subprocess.run([SNAKEMAKE, "--configfile", *base, "--cores", "2"], cwd=local, check=True,
                       capture_output=True)
        rows.append(f"| local (--cores 2) | {time.perf_counter() - t0:.0f} |")
        start = subprocess.run(["bash", str(ROOT / "tools/slurm/start.sh")], env=env, text=True,
                               capture_output=True, check=True)
        env["SLURM_CONF"] = start.stdout.strip().split("=", 1)[1]
        try:
            remote = link_workflow(ROOT, Path(tmp) / "b" / "main")
            t0 = time.perf_counter()
            subprocess.run(["timeout", "-k", "10", "1800", SNAKEMAKE, "--configfile", *base,
                            "--executor", "slurm", "--jobs", "2", "--slurm-no-account",
                            "--slurm-status-command", "squeue",
                            "--slurm-init-seconds-before-status-checks", "2",
                            "--default-resources", "slurm_partition=debug", "mem_mb=800",
                            "runtime=20", "cpus_per_task=1"], cwd=remote, env=env, check=True,
                           capture_output=True)
            rows.append(f"| profiles/slurm on a 1-node local cluster (--jobs 2) | "
                        f"{time.perf_counter() - t0:.0f} |")
        finally:
            subprocess.run(["bash", str(ROOT / "tools/slurm/stop.sh"), "--purge"], env=env, check=False)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", nargs="+", default=["config.yaml", "experiments/tiny.yaml"])
    ap.add_argument("--bench-dir", type=Path, help="benchmarks/ of a finished run of --base")
    ap.add_argument("--slurm", action="store_true", help="also time local vs Slurm (root, minutes)")
    args = ap.parse_args()
    lines = [f"## cluster: sharing across experiments (base {' '.join(args.base)})", "",
             *bench_sharing(args.base, args.bench_dir)]
    if args.slurm:
        lines += ["", "### local vs Slurm", "", *bench_slurm(args.base)]
    text = "\n".join(lines) + "\n"
    print(text)
    out = ROOT / "bench/results/cluster.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
