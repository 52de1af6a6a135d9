"""Run every stage benchmark (bench/<stage>.py) in turn: `python -m bench [stage ...]`.

Each benchmark measures its stage side by side with the naive baseline in one run, prints a
markdown table and writes it to bench/results/<stage>.md; this runner concatenates them into
bench/results/ALL.md so the README tables can be refreshed from one file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    stages = argv or sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))
    failed = []
    for stage in stages:
        print(f"== bench/{stage}.py", flush=True)
        if subprocess.run([sys.executable, str(HERE / f"{stage}.py")], check=False).returncode != 0:
            failed.append(stage)
    results = HERE / "results"
    parts = [p.read_text() for p in sorted(results.glob("*.md")) if p.name != "ALL.md"]
    (results / "ALL.md").write_text("\n\n".join(parts))
    if failed:
        print("failed:", ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
