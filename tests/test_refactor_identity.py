"""Refactors change no output: the tiny experiment run with the code at the identity base
(tests/identity_base.txt) and with this checkout gives the same shards, models and scores,
byte for byte (JSON once wall-clock fields are removed), on the same machine.

The two runs are fixtures, each bounded by its own limit (tinyrun.TINY_RUN_LIMIT_S) and scheduled
alike (tinyrun.TINY_SCHEDULING); the test's own timeout covers only the comparison."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from tinyrun import REPO, SNAKEMAKE, TINY, TINY_RUN_LIMIT_S, TINY_SCHEDULING, output_digests, run

pytestmark = pytest.mark.integration

# Differ between any two runs of the same code: logs, wall-clock benchmarks, the HTML report's timings.
_VOLATILE = ("logs/", "benchmarks/", "results/report/")
# Resume state (work-*/: last.pt, best.pt, rng-rank*.pt): scratch the trainer deletes once the model
# is exported (a base that keeps it is still comparable) and the resume tests check; the model, metrics
# and summary it leads to are compared here.
_RESUME_STATE = re.compile(r"/work-[0-9a-f]+/")


def _base_commit() -> str:
    line = (REPO / "tests/identity_base.txt").read_text().splitlines()[0].strip()
    assert line and not line.startswith("#"), "tests/identity_base.txt: first line must be a commit"
    return line


def _checkout(commit: str, dest: Path) -> Path:
    """The repository's files at ``commit`` (git archive: no work tree or branch is touched)."""
    dest.mkdir(parents=True)
    tar = dest.parent / "base.tar"
    proc = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(tar), commit],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"identity base {commit} not in this clone's history: {proc.stderr.strip()}")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return dest


def _comparable(files: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in files.items()
            if not any(part in k for part in _VOLATILE) and not _RESUME_STATE.search(k)}


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> tuple[Path, set[str]]:
    """The tiny experiment run with the identity base's code: (work dir, files git tracks under
    its results/, which are not outputs)."""
    root = tmp_path_factory.mktemp("identity")
    base = _checkout(_base_commit(), root / "base")
    os.symlink(REPO.parent / "shared", root / "shared")  # configs name ../shared
    env = dict(os.environ, PYTHONPATH=str(base / "src"))  # the base's library, not this checkout's
    tracked = set(output_digests(base))
    # scheduled as this checkout's run is (tinyrun.TINY_SCHEDULING), whatever the base's rules say
    run([SNAKEMAKE, *TINY, *TINY_SCHEDULING], base, env=env, limit=TINY_RUN_LIMIT_S)
    return base, tracked


# Idle: the comparison hashes both runs' outputs (~1 GB of models each), seconds on 2 idle cores.
@pytest.mark.timeout(300, func_only=True)
def test_tiny_outputs_identical_to_identity_base(tiny_local, tiny_base):
    base, tracked = tiny_base
    ours = {k: v for k, v in _comparable(output_digests(tiny_local)).items() if k not in tracked}
    theirs = {k: v for k, v in _comparable(output_digests(base)).items() if k not in tracked}
    assert len(theirs) > 50
    assert sorted(set(ours) ^ set(theirs)) == [], "the two runs made different sets of files"
    differ = [p for p in sorted(ours) if ours[p] != theirs[p]]
    assert not differ, f"outputs differ from the identity base {_base_commit()}: {differ}"
