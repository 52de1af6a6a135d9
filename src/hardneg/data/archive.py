"""Unpack ``senteval.tar`` into the SentEval layout, atomically and safely."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

# What a usable SentEval folder must contain (SimCSE's evaluation reads these).
REQUIRED = ("STS/STS12-en-test", "STS/STSBenchmark", "SICK")


def extract_senteval(archive: str | Path, out_dir: str | Path) -> Path:
    """Extract ``archive`` to ``out_dir`` (renamed into place only when complete and valid)."""
    archive, out_dir = Path(archive), Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")  # refuses absolute paths, links outside
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ValueError(f"{archive}: corrupt or truncated tar archive: {exc}") from exc
        missing = [r for r in REQUIRED if not (tmp / r).is_dir()]
        if missing:
            raise ValueError(f"{archive}: not a SentEval archive (missing {', '.join(missing)})")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out_dir
