"""An isolated work directory that runs the repository's workflow without touching its results.

Snakemake resolves outputs relative to the working directory; linking the workflow files
(Snakefile, rules, scripts, schemas, configs, profiles) into a fresh folder gives a second,
independent results/ tree: used by the tests (local vs Slurm runs, cache checks) and by users
who want to try an overlay without disturbing a finished experiment.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# Run outputs (never shared with the repository's own); everything else is linked.
OUTPUT_ITEMS = frozenset(
    {"results", "data", "logs", "benchmarks", "resources", "report.html", "tests", "bench"}
)


def link_workflow(repo: str | Path, dest: str | Path, copy: tuple[str, ...] = ()) -> Path:
    """Populate ``dest`` with symlinks to the repository's workflow files; items in ``copy``
    are copied instead (so a test can edit them without changing the repository).

    Configs name ``../shared`` relative to the repository (mirror, reference files), so the
    repository's sibling ``shared`` folder is linked beside ``dest`` as well.
    """
    repo, dest = Path(repo).resolve(), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shared = repo.parent / "shared"
    if shared.is_dir() and not (dest.parent / "shared").exists():
        os.symlink(shared, dest.parent / "shared")
    if not (repo / "Snakefile").is_file():
        raise FileNotFoundError(f"{repo}/Snakefile: not a workflow repository")
    for src in sorted(repo.iterdir()):
        name = src.name
        if name.startswith(".") or name in OUTPUT_ITEMS:
            continue
        target = dest / name
        if target.exists() or target.is_symlink():
            continue
        if name in copy:
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, target)
        else:
            os.symlink(src, target)
    return dest
