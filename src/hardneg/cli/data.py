"""``hardneg download`` and ``hardneg prepare-corpus``: the data stage outside Snakemake."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

from hardneg.config import schema_default, shard_plan_error

DEFAULT_BASE = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/"


def _sha256(value: str) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{64}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a SHA-256 digest (64 hex digits)")
    return value.lower()


def _bounded(kind: type, minimum: float, strict: bool = False):
    """An argparse type: ``kind`` (int/float) at least ``minimum`` (above it if ``strict``),
    the bound the config schema sets for the same ``data`` setting."""

    def parse(value: str):
        try:
            number = kind(value)
        except ValueError:
            noun = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{value!r} is not {noun}") from None
        if math.isnan(number) or (number <= minimum if strict else number < minimum):
            raise argparse.ArgumentTypeError(
                f"{value} must be {'>' if strict else '>='} {minimum}")
        return number

    return parse


def _download(args: argparse.Namespace) -> int:
    from hardneg.data.run import run_download

    dest = Path(args.out) if args.out else Path(args.filename)
    record = run_download(
        args.base_url.rstrip("/") + "/" + args.filename,
        dest,
        dest.with_name(dest.name + ".manifest.json"),
        {"retries": args.retries, "backoff_s": args.backoff_s, "timeout_s": args.timeout_s},
        mirror=args.mirror,
        sha256=args.sha256,
    )
    print(json.dumps(record, indent=2))
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from hardneg.data.corpus import n_shards
    from hardneg.data.run import run_prepare_corpus

    out = Path(args.out_dir)
    for name in ("max_sentences", "shard_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if err := shard_plan_error(args.max_sentences, args.shard_size, where="--"):
        raise ValueError(err.replace("--max_sentences", "--max-sentences").replace(
            "--shard_size", "--shard-size"))
    n = n_shards(args.max_sentences, args.shard_size)
    shards = [out / f"shard-{i:03d}.parquet" for i in range(n)]
    manifest = run_prepare_corpus(
        args.corpus,
        shards,
        out / "rejects.parquet",
        out / "manifest.json",
        {"max_sentences": args.max_sentences, "shard_size": args.shard_size, "min_chars": args.min_chars,
         "dedupe": not args.keep_duplicates},
        senteval_dir=args.senteval_dir,
    )
    # A previous run with more shards must not leave files a glob would read as this corpus.
    for stale in sorted(set(out.glob("shard-*.parquet")) - set(shards)):
        stale.unlink()
        print(f"removed stale {stale} (not part of this corpus)")
    print(json.dumps({k: manifest[k] for k in ("lines_read", "kept", "dropped", "leakage")}, indent=2))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("download", help="download one upstream file (mirror-aware, resumable)")
    p.add_argument("filename", help="e.g. wiki1m_for_simcse.txt or senteval.tar")
    p.add_argument("--out", help="destination path (default: ./FILENAME)")
    p.add_argument("--base-url", default=DEFAULT_BASE, help="upstream base URL (default: %(default)s)")
    p.add_argument("--mirror", help="http(s)/file:// base URL or folder replacing the upstream host")
    p.add_argument("--sha256", type=_sha256, help="expected checksum, 64 hex digits (verified)")
    p.add_argument("--retries", type=_bounded(int, 0), default=schema_default("data.retries"),
                   help="data.retries (default: %(default)s)")
    p.add_argument("--backoff-s", type=_bounded(float, 0), default=schema_default("data.backoff_s"),
                   help="data.backoff_s: first wait between tries, doubled each time (default: %(default)s)")
    p.add_argument("--timeout-s", type=_bounded(float, 0, strict=True), default=schema_default("data.timeout_s"),
                   help="data.timeout_s: per request (default: %(default)s)")
    p.set_defaults(func=_download)

    p = sub.add_parser("prepare-corpus", help="normalise, de-duplicate, cap and shard a corpus")
    p.add_argument("corpus", help="one sentence per line (UTF-8)")
    p.add_argument("out_dir")
    p.add_argument("--max-sentences", type=int, required=True)
    p.add_argument("--shard-size", type=int, required=True)
    p.add_argument("--min-chars", type=int, default=schema_default("corpus.min_chars"),
                   help="corpus.min_chars (default: %(default)s)")
    p.add_argument("--keep-duplicates", action="store_true",
                   help="corpus.dedupe: false (default: de-duplicate, as corpus.dedupe: true)")
    p.add_argument("--senteval-dir", help="extracted senteval.tar, for the leakage count")
    p.set_defaults(func=_prepare)
