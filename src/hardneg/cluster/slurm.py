"""Slurm pre-flight checks and failure diagnosis.

``check_requests``: compare every planned job's resources (from ``snakemake -n``) with what the
cluster offers (``sinfo``), before anything is submitted. Without it, a request the cluster lacks
either fails at sbatch ("Requested node configuration is not available") or, worse, a runtime
above the partition's MaxTime leaves the job PENDING (PartitionTimeLimit) while Snakemake waits.

``diagnose_log``: read a Snakemake log after a failure and say, per failed rule, what happened
(time limit, out of memory, rejected by sbatch, ...) and how to resume.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Partition:
    name: str
    default: bool
    cpus: int  # per node
    mem_mb: int  # per node
    gpus: int  # per node (gres gpu)
    max_minutes: float  # inf = no limit


@dataclass
class PlannedJob:
    rule: str
    threads: int = 1
    resources: dict[str, str] = field(default_factory=dict)


def parse_timelimit(text: str) -> float:
    """Slurm time limit (``[D-]HH:MM:SS``, ``MM:SS``, ``infinite``) -> minutes."""
    text = text.strip()
    if text in ("infinite", "UNLIMITED", "n/a", ""):
        return float("inf")
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts
    return days * 1440 + h * 60 + m + s / 60


def _gpus(gres: str) -> int:
    total = 0
    for item in gres.split(","):
        m = re.match(r"gpu(?::[^:(]+)?:(\d+)", item.strip())
        if m:
            total += int(m[1])
    return total


def parse_sinfo(text: str) -> list[Partition]:
    """Lines of ``sinfo -h -o '%P|%c|%m|%G|%l'`` -> partitions (max over their node groups)."""
    parts: dict[str, Partition] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, cpus, mem, gres, limit = line.split("|")
        default = name.endswith("*")
        name = name.rstrip("*")
        p = Partition(name, default, int(cpus.rstrip("+")), int(mem.rstrip("+")), _gpus(gres),
                      parse_timelimit(limit))
        old = parts.get(name)
        if old:  # several node groups: keep the largest node
            p = Partition(name, default or old.default, max(p.cpus, old.cpus), max(p.mem_mb, old.mem_mb),
                          max(p.gpus, old.gpus), max(p.max_minutes, old.max_minutes))
        parts[name] = p
    return list(parts.values())


def cluster_partitions() -> list[Partition]:
    """The cluster's partitions, via sinfo (honours SLURM_CONF)."""
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%P|%c|%m|%G|%l"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except FileNotFoundError as exc:
        raise RuntimeError("sinfo not found: not on a Slurm login node?") from exc
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"sinfo failed: {exc.stderr.strip()}") from exc
    return parse_sinfo(out)


def parse_dryrun(text: str) -> list[PlannedJob]:
    """Jobs of a ``snakemake -n`` listing (``rule X:`` blocks with ``threads:``/``resources:``)."""
    jobs: list[PlannedJob] = []
    cur: PlannedJob | None = None
    for line in text.splitlines():
        m = re.match(r"^(local)?rule (\w+):\s*$", line)
        if m:
            # localrule jobs (downloads, the report) never reach the cluster.
            cur = PlannedJob(m[2]) if m[2] != "all" and not m[1] else None
            if cur:
                jobs.append(cur)
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith("threads:"):
            cur.threads = int(s.split(":", 1)[1])
        elif s.startswith("resources:"):
            for kv in s.split(":", 1)[1].split(","):
                if "=" in kv:
                    k, v = kv.strip().split("=", 1)
                    cur.resources[k] = v
    return jobs


def _num(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def check_requests(jobs: Iterable[PlannedJob], partitions: Sequence[Partition],
                   local_rules: Iterable[str] = ()) -> list[str]:
    """Problems, one line per rule and resource, each naming the fix; empty when all fit."""
    local = set(local_rules)
    by_name = {p.name: p for p in partitions}
    default = next((p for p in partitions if p.default), partitions[0] if partitions else None)
    problems: dict[tuple[str, str], str] = {}
    for job in jobs:
        if job.rule in local:
            continue
        r = job.resources
        pname = r.get("slurm_partition")
        part = by_name.get(pname) if pname else default
        if part is None:
            problems[(job.rule, "slurm_partition")] = (
                f"rule {job.rule}: partition '{pname}' does not exist (have: {', '.join(by_name)}); "
                f"set slurm_partition in profiles/slurm/config.yaml")
            continue
        fix = "profiles/slurm/config.yaml set-resources or --set-resources {rule}:{key}=<value>"
        cpus = _num(r.get("cpus_per_task")) or job.threads
        checks = [
            ("cpus_per_task", cpus, part.cpus, "sbatch rejects it"),
            ("mem_mb", _num(r.get("mem_mb")), part.mem_mb, "sbatch rejects it"),
            ("gpu", _num(r.get("gpu")) or 0, part.gpus, "sbatch rejects it"),
            ("runtime", _num(r.get("runtime")), part.max_minutes,
             "the job would stay PENDING (PartitionTimeLimit) and Snakemake would wait forever"),
        ]
        for key, want, have, effect in checks:
            if want is not None and want > have:
                problems[(job.rule, key)] = (
                    f"rule {job.rule}: {key}={want:g} but partition '{part.name}' offers at most "
                    f"{have:g}: {effect}; lower it in " + fix.format(rule=job.rule, key=key))
    return list(problems.values())


_ERR_RE = re.compile(r"^Error in rule (\w+):\s*$", re.MULTILINE)


def diagnose_log(text: str) -> list[str]:
    """Per failed rule in a Snakemake log: the cause (when recognisable) and how to resume."""
    out = []
    blocks = _ERR_RE.split(text)
    for rule, body in zip(blocks[1::2], blocks[2::2]):
        body = body.split("\n\n", 1)[0]
        jobid = re.search(r"external_jobid: (\S+)", body)
        where = f" (Slurm job {jobid[1]})" if jobid else ""
        if "TIMEOUT" in body or "DUE TO TIME LIMIT" in body:
            cause = (f"was killed by the scheduler's time limit; raise it: --set-resources "
                     f"{rule}:runtime=<minutes> (or set-resources.{rule}.runtime in the profile; "
                     f"train: config train.runtime)")
        elif "OUT_OF_MEMORY" in body or "oom-kill" in body.lower():
            cause = f"ran out of memory; raise --set-resources {rule}:mem_mb=<MB>"
        elif "sbatch failed" in body:
            msg = re.search(r"The error message was '([^']*)'", body)
            cause = (f"was rejected by sbatch ({msg[1] if msg else 'see log'}): the cluster lacks a "
                     f"requested resource; run `hardneg slurm-check` and lower it")
        elif "PREEMPTED" in body or "NODE_FAIL" in body:
            cause = "was preempted or lost its node; just resume"
        else:
            log = re.search(r"log: (\S+)", body)
            cause = f"failed; see {log[1] if log else 'its log'}"
        out.append(f"rule {rule}{where} {cause}.")
    if out:
        out.append("Resume: re-run the same snakemake command. Finished outputs are kept and only "
                   "missing or incomplete ones run again (--rerun-incomplete); add --keep-going to "
                   "let independent jobs finish meanwhile.")
    return out


def latest_log(workdir: str | Path = ".") -> Path:
    logs = sorted((Path(workdir) / ".snakemake/log").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"{Path(workdir) / '.snakemake/log'}: no Snakemake log to diagnose")
    return logs[-1]
