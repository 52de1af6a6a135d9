"""Running the tiny experiment from tests and comparing two runs' outputs byte for byte."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the environment's console scripts (snakemake, hardneg)
SNAKEMAKE = str(BIN / "snakemake")
TINY = ["--configfile", "config.yaml", "experiments/tiny.yaml"]

_TIMING = re.compile(r"(seconds|_s|per_s|time|elapsed)$")


def output_files(root: Path, subdirs: tuple[str, ...] = ("results",)) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root``/``subdirs`` (for byte comparisons)."""
    out: dict[str, bytes] = {}
    for sub in subdirs:
        base = root / sub
        if base.exists():
            for path in sorted(base.rglob("*")):
                if path.is_file():
                    out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


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
