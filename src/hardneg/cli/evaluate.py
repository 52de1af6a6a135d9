"""``hardneg eval-sts``, ``hardneg splits``: STS and Cont./Oppn. evaluation outside the workflow."""

from __future__ import annotations

import argparse

from hardneg.config import schema_default
from hardneg.data.senteval import STS_DATASETS


def _threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(n)


def _eval_sts(args: argparse.Namespace) -> int:
    from hardneg.data.senteval import check_senteval_dir

    check_senteval_dir(args.senteval_dir)  # before importing torch and loading a model
    from hardneg.encoders import POOLERS
    from hardneg.evaluate.run import evaluate_model

    if args.pooler not in POOLERS:
        raise ValueError(f"--pooler: unknown pooler {args.pooler!r} (known: {', '.join(POOLERS)})")
    _threads(args.threads)
    metrics = evaluate_model(
        args.model, args.senteval_dir, args.out,
        pooler=args.pooler, template=args.template, max_length=args.max_length, device=args.device,
        batch_size=args.batch_size, datasets=args.datasets or (STS_DATASETS if args.split == "test" else None),
        split=args.split, max_pairs=args.max_pairs, predictions_out=args.predictions,
        splits_path=args.splits, cont_oppn_out=args.cont_oppn, show_progress=not args.quiet,
    )
    rows = [f"{k:>16} {v['spearman']:6.2f}" for k, v in metrics.items() if v.get("spearman") is not None]
    print("\n".join(rows))
    return 0


def _splits(args: argparse.Namespace) -> int:
    from hardneg.evaluate.run import run_splits

    lo, hi = args.median_range
    if not lo <= hi:  # also refuses NaN
        raise ValueError(f"--median-range: LO {lo} must be <= HI {hi}")
    stats_path = args.stats or (args.out.removesuffix(".parquet")) + ".stats.json"
    settings = {"median_range": list(args.median_range)} | ({"sources": args.sources} if args.sources else {})
    table, summary = run_splits(args.senteval_dir, args.out, stats_path, settings)
    for name, s in summary["groups"].items():
        flag = "" if s["included"] else "  (excluded: median score outside range)"
        print(f"{name:>28} n={s['n']:5d} cont={s['cont']:5d} oppn={s['oppn']:5d} "
              f"median score={s['median_score']:.2f} median MER={s['median_mer']:.4f}{flag}")
    print(f"wrote {args.out} ({table.height} pairs) and {stats_path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("eval-sts", help="STS12-16, STS-B, SICK-R Spearman of an encoder (SentEval 'all')")
    p.add_argument("model", help="HF hub id, local folder, sentence-transformers folder, or package:NAME")
    p.add_argument("--senteval-dir", required=True, help="SentEval data folder (STS/, SICK/)")
    p.add_argument("--out", required=True, help="summary JSON (a key per dataset, spearman x100)")
    p.add_argument("--pooler", default=schema_default("evaluate.baseline_pooler"),
                   help="cls, cls_before_pooler, avg, avg_first_last, avg_top2, mask "
                        "(default: %(default)s, as evaluate.baseline_pooler)")
    p.add_argument("--template", default=None, help="prompt template for the [MASK] pooler (sncse1, sncse2)")
    p.add_argument("--predictions", default=None, help="per-pair predictions Parquet")
    p.add_argument("--splits", default=None, help="Cont./Oppn. splits Parquet (from `hardneg splits`)")
    p.add_argument("--cont-oppn", default=None, help="Cont./Oppn. figures JSON (needs --splits)")
    p.add_argument("--split", default="test", choices=["test", "dev"], help="test, or dev (STS-B/SICK-R)")
    p.add_argument("--datasets", nargs="+", default=None, choices=list(STS_DATASETS))
    p.add_argument("--max-length", type=int, default=schema_default("evaluate.max_length"),
                   help="evaluate.max_length (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=schema_default("evaluate.batch_size"),
                   help="evaluate.batch_size (default: %(default)s)")
    p.add_argument("--max-pairs", type=int, default=None,
                   help="evaluate.max_pairs: subsample per dataset (quick checks only; default: all pairs)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_eval_sts)

    s = subparsers.add_parser("splits", help="Cont./Oppn. splits of the STS data (OssCSE §3.3)")
    s.add_argument("--senteval-dir", required=True)
    s.add_argument("--out", required=True, help="splits Parquet (one row per pair)")
    s.add_argument("--stats", default=None, help="statistics JSON (default: OUT with .stats.json)")
    s.add_argument("--median-range", nargs=2, type=float, default=schema_default("evaluate.splits.median_range"),
                   metavar=("LO", "HI"), help="include a source when its median human score is in [LO, HI] "
                                              "(default: %(default)s, as the paper)")
    s.add_argument("--sources", nargs="+", default=None,
                   help="STS12..STS16 (per subset) and DATASET:SPLIT, e.g. STSBenchmark:train "
                        "(default: STS12-16, STSBenchmark:train, STSBenchmark:test)")
    s.set_defaults(func=_splits)
