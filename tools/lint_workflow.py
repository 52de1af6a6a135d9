"""`snakemake --lint` for config.yaml and every overlay, combined as they are meant to be used.

- experiments/*.yaml: each on top of config.yaml (tiny-slurm.yaml on top of tiny.yaml);
- experiments/reference/*.yaml: on top of config.yaml + quick.yaml (san-table3.yaml also on top of
  methods.yaml + reference/san.yaml, as its header says);
- experiments/ablations/*.yaml: the first variant's overlay of each family, as `hardneg ablate`
  writes it, on top of config.yaml + quick.yaml (a family's variants differ in values only);
- the test overlays, every *.yaml under tests/ (tests/methods/own_method.yaml on top of
  config.yaml + tiny.yaml, as its header says; any other on top of config.yaml).

Usage: python tools/lint_workflow.py [--list]   (exit 1 naming every combination that fails)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ["config.yaml"]
QUICK = [*BASE, "experiments/quick.yaml"]
# an overlay that extends another experiment file rather than config.yaml alone
ON_TOP_OF = {
    "experiments/tiny-slurm.yaml": [*BASE, "experiments/tiny.yaml"],
    "experiments/reference/san-table3.yaml": [*BASE, "experiments/methods.yaml", "experiments/reference/san.yaml"],
    "tests/methods/own_method.yaml": [*BASE, "experiments/tiny.yaml"],
}


def overlays_under_tests() -> list[str]:
    """Every overlay YAML under tests/ (relative paths): each is linted like the experiments'."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.yaml")
                  if "__pycache__" not in p.parts)


def combinations(scratch: Path) -> list[list[str]]:
    """Config-file lists to lint (paths relative to the repository, or under ``scratch``)."""
    import yaml

    from hardneg.cluster.ablate import list_families, load_family

    out = [BASE]
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        rel = path.relative_to(ROOT).as_posix()
        out.append([*ON_TOP_OF.get(rel, BASE), rel])
    for path in sorted((ROOT / "experiments/reference").glob("*.yaml")):
        rel = path.relative_to(ROOT).as_posix()
        out.append([*ON_TOP_OF.get(rel, QUICK), rel])
    for family in list_families(ROOT):
        variant = load_family(family, "quick", ROOT)[0]
        overlay = scratch / f"{family}-{variant.name}.yaml"
        overlay.write_text(yaml.safe_dump(variant.overlay, sort_keys=True))
        out.append([*QUICK, str(overlay)])
    out += [[*ON_TOP_OF.get(rel, BASE), rel] for rel in overlays_under_tests()]
    return out


def lint(configfiles: list[str]) -> subprocess.CompletedProcess:
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    return subprocess.run([snakemake, "--lint", "--configfile", *configfiles], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="lint-overlays-") as tmp:
        combos = combinations(Path(tmp))
        if "--list" in argv:
            print("\n".join(" ".join(c) for c in combos))
            return 0
        failed = []
        for combo in combos:
            run = lint(combo)
            print(f"{'ok  ' if run.returncode == 0 else 'FAIL'} snakemake --lint --configfile {' '.join(combo)}")
            if run.returncode != 0:
                failed.append(combo)
                print((run.stdout + run.stderr)[-3000:])
        if failed:
            print(f"{len(failed)} of {len(combos)} combinations fail snakemake --lint", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
