"""``hardneg inspect SHARD.parquet``: a readable sample and per-shard statistics."""

from __future__ import annotations

import argparse


def _run(args: argparse.Namespace) -> int:
    from hardneg.augment.inspect import inspect_shard
    from hardneg.augment.units import load_augmenters

    load_augmenters(args.augmenter, "--augmenter")
    if args.sample < 0:
        raise ValueError(f"-n/--sample must be >= 0, got {args.sample}")
    for path in args.shards:
        print(inspect_shard(path, sample=args.sample, seed=args.seed))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show originals beside their augmentations, with statistics",
        description="Print a sample of an augmentation shard (replaced words in [brackets]) "
        "and its statistics: rows per status, drop/substitution reasons, and the augmenter's "
        "own measures (e.g. MER to the original per SAN iteration).",
    )
    p.add_argument("shards", nargs="+", metavar="SHARD.parquet")
    p.add_argument("-n", "--sample", type=int, default=5, help="rows to show (default 5)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--augmenter", action="append", metavar="MODULE_OR_FILE",
                   help="an augmenter of your own to register (repeatable) first (as the config's 'augmenters', docs/extending.md)")
    p.set_defaults(func=_run)
