"""``hardneg mine``: mined hard negatives for corpus shards (the runner the workflow's rules call,
:mod:`hardneg.augment.mine.run`); option defaults are the config schema's (``mine.*``)."""

from __future__ import annotations

import argparse
import json

from hardneg.config import schema_default

DEFAULT_SEED = 0  # the config's top-level seed has no schema default


def _mine(args: argparse.Namespace) -> int:
    from hardneg.augment.mine.run import mine_corpus

    settings = {k: getattr(args, k) for k in (
        "encoder", "pooler", "max_length", "num_negatives", "range_min", "range_max", "max_score", "min_score",
        "absolute_margin", "relative_margin", "sampling_strategy", "batch_size", "device", "threads")}
    out = mine_corpus(args.corpus, args.out, settings, seed=args.seed, embeddings=args.embeddings,
                      threads=args.threads)
    print(json.dumps({name: {k: s[k] for k in ("rows_in", "rows_out", "reasons", "negatives")}
                      for name, s in out.items()}, indent=2))
    return 0


def _d(key: str, what: str = "") -> dict:
    return {"default": schema_default(f"mine.{key}"), "help": f"{what}{'; ' if what else ''}mine.{key} (default: %(default)s)"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "mine", help="hard negatives mined from the corpus (nearest neighbours in a rank/score band)",
        description="Encode the corpus shards (embeddings cached in --embeddings), then write OUT/<shard name> "
                    "per shard: each sentence's neighbours chosen by rank band, score limits and margins to the "
                    "sentence itself (sentence_transformers.util.mine_hard_negatives's settings).")
    p.add_argument("corpus", nargs="+", metavar="SHARD.parquet", help="corpus shards (id, text): queries and candidates")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--embeddings", metavar="DIR", help="embeddings folder, reused when present (default: OUT/embeddings)")
    p.add_argument("--encoder", **_d("encoder", "hub id, folder or package:NAME"))
    p.add_argument("--pooler", **_d("pooler"))
    p.add_argument("--max-length", type=int, **_d("max_length"))
    p.add_argument("--num-negatives", type=int, **_d("num_negatives"))
    p.add_argument("--range-min", type=int, **_d("range_min"))
    p.add_argument("--range-max", type=int, **_d("range_max"))
    p.add_argument("--max-score", type=float, **_d("max_score"))
    p.add_argument("--min-score", type=float, **_d("min_score"))
    p.add_argument("--absolute-margin", type=float, **_d("absolute_margin"))
    p.add_argument("--relative-margin", type=float, **_d("relative_margin"))
    p.add_argument("--sampling-strategy", choices=["top", "random"], **_d("sampling_strategy"))
    p.add_argument("--batch-size", type=int, **_d("batch_size", "encoding batch"))
    p.add_argument("--device", **_d("device"))
    p.add_argument("--threads", type=int, **_d("threads", "torch CPU threads"))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of sampling_strategy random (default: %(default)s)")
    p.set_defaults(func=_mine)
