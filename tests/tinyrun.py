"""Running the tiny experiment from tests and comparing two runs' outputs byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the environment's console scripts (snakemake, hardneg)
SNAKEMAKE = str(BIN / "snakemake")
TINY = ["--configfile", "config.yaml", "experiments/tiny.yaml"]

# How every tiny run the tests make is scheduled (this checkout's, the identity base's, the Slurm
# one): 2 cores, one thread per job, so that two jobs run at once. A tiny job is mostly interpreter
# start-up, imports and model loading, which use one core whatever `threads` says; with the rules'
# own 2 threads the jobs ran one after another. Threads enter no output key, and the runs that are
# compared byte for byte are all scheduled alike (docs/reliability.md).
TINY_THREADS = ["--max-threads", "1"]
TINY_SCHEDULING = ["--cores", "2", *TINY_THREADS]

# One tiny experiment run: about 14 min on 2 idle cores with the rules' own threads, 289 s with
# TINY_SCHEDULING (both measured, docs/benchmarks.md). Each run is bounded on its own at six times
# that, so that a busy machine slows it without failing it.
TINY_RUN_LIMIT_S = 1800

_TIMING = re.compile(r"(seconds|_s|per_s|time|elapsed)$")


def output_digests(root: Path, subdirs: tuple[str, ...] = ("results",)) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``root``/``subdirs``, JSON/JSONL once wall-clock
    fields are removed (``untimed``): two runs compare by digest, without holding gigabytes."""
    out: dict[str, str] = {}
    for sub in subdirs:
        base = root / sub
        if base.exists():
            for path in sorted(base.rglob("*")):
                if path.is_file():
                    rel = path.relative_to(root).as_posix()
                    out[rel] = _digest(rel, path)
    return out


def _digest(rel: str, path: Path) -> str:
    h = hashlib.sha256()
    if rel.endswith((".json", ".jsonl")):
        h.update(json.dumps(untimed(rel, path.read_bytes()), sort_keys=True).encode())
    else:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def run(cmd: list[str], cwd: Path, env: dict | None = None, limit: int = 900,
        ok: bool = True) -> subprocess.CompletedProcess:
    """``cmd`` under ``timeout -k`` (snakemake ignores SIGTERM while it waits on cluster jobs)."""
    proc = subprocess.run(["timeout", "-k", "10", str(limit), *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    if ok:
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-6000:]}"
    return proc


def untimed(path: str, data: bytes):
    """JSON/JSONL with timing keys removed (they differ between any two runs); other bytes as is."""

    def strip(obj):
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if not _TIMING.search(k)}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    if path.endswith(".json"):
        return strip(json.loads(data))
    if path.endswith(".jsonl"):
        return [strip(json.loads(x)) for x in data.splitlines() if x.strip()]
    return data
