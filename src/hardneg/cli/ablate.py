"""``hardneg ablate FAMILY``: run an ablation family (experiments/ablations/FAMILY.yaml) as one
Snakemake DAG holding every variant, whose last job writes the variants' STS results side by side."""

from __future__ import annotations

import argparse
import shlex


def _run(args: argparse.Namespace) -> int:
    from hardneg.cluster.ablate import list_families, run_family

    if args.list:
        print("\n".join(list_families(args.root)))
        return 0
    if not args.family:
        raise ValueError("name an ablation family (hardneg ablate --list shows them)")
    extra = shlex.split(args.snakemake)
    out = run_family(args.family, base=args.base, variants=args.variants.split(",") if args.variants else None,
                     snakemake_args=extra, root=args.root, dry_run=args.dry_run)
    print(f"{'planned' if args.dry_run else 'wrote'} {out}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ablate", help="run an ablation family and compare its variants",
        description="Run every variant of experiments/ablations/FAMILY.yaml as its own experiment "
                    "(<base>-FAMILY-<variant>), all in one Snakemake invocation (the generated "
                    "results/ablations/FAMILY/<base>.smk), which writes results/ablations/FAMILY/<base>.md.")
    p.add_argument("family", nargs="?", help="family name, e.g. tau2, san-iterations, mask-scale, mer-window")
    p.add_argument("--base", nargs="+", default=["config.yaml", "experiments/quick.yaml"],
                   help="base config files, in order (default: config.yaml experiments/quick.yaml)")
    p.add_argument("--variants", help="comma-separated subset of variants (default: all)")
    p.add_argument("--list", action="store_true", help="list the families")
    p.add_argument("--dry-run", action="store_true", help="snakemake -n: plan every variant's jobs, run nothing")
    p.add_argument("--root", default=".", help="workflow directory (default: .)")
    p.add_argument("--snakemake", default="--cores all", metavar="ARGS",
                   help="options passed to the snakemake call (default: '--cores all'), "
                        "e.g. \"--profile profiles/slurm\"")
    p.set_defaults(func=_run)
