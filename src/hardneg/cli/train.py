"""``hardneg train``: train one method x seed from Parquet shards (also under torchrun)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from hardneg.augment.units import BUILTIN_UNIT_MODULES, units
from hardneg.config import schema_default

# the packaged augmenters: their --<column> options exist before parsing (others: --shards)
_BUILTIN_UNITS = [u for u in units() if u.module in BUILTIN_UNIT_MODULES]


def _parse_set(items: list[str]) -> dict:
    """``KEY=VALUE`` pairs as settings; a dotted key nests (``method_settings.hicl.alpha=0.2``)."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE (e.g. --set lr=1e-5)")
        parsed = yaml.safe_load(value)
        if isinstance(parsed, str):  # YAML 1.1 reads "2e-5" as a string
            try:
                parsed = float(parsed)
            except ValueError:
                pass
        *parents, leaf = key.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # the CLI prints ValueErrors as one line
                raise ValueError(f"--set {item!r}: {part} is set to a value, not a mapping")  # noqa: TRY004
        node[leaf] = parsed
    return out


def resolve_settings(args: argparse.Namespace):
    """Preset <- config file train section <- --set; or a full --settings JSON file."""
    from hardneg.train.settings import TrainSettings

    if args.settings:
        try:
            d = json.loads(Path(args.settings).read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"--settings: file not found: {args.settings}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"--settings {args.settings}: invalid JSON: {exc}") from None
        from hardneg.train.presets import merge_settings

        return TrainSettings.from_dict(merge_settings(d, _parse_set(args.set)))
    from hardneg.train.presets import settings_from_config

    train_cfg: dict = {}
    if args.configfile:
        from hardneg.config import load_config

        cfg = load_config(args.configfile)
        train_cfg = cfg.get("train", {})
        _load_augmenters(cfg.get("augmenters"))
    if not args.method:
        raise ValueError("--method is required (or --settings FILE)")
    if args.init_model:
        train_cfg = {**train_cfg, "init_model": args.init_model}
    if not train_cfg.get("init_model"):
        raise ValueError("--init-model is required (or train.init_model in --configfile)")
    seed = args.seed if args.seed is not None else (train_cfg.get("seeds") or schema_default("train.seeds"))[0]
    return settings_from_config(train_cfg, args.method, seed, extra=_parse_set(args.set))


def _load_augmenters(specs, setting: str = "config setting 'augmenters'") -> None:
    """Register augmenters of your own (the config's ``augmenters``, ``--augmenter``; docs/extending.md)."""
    from hardneg.augment.units import load_augmenters

    load_augmenters(specs, setting)


def _augment_shards(args: argparse.Namespace) -> dict[str, list[str]]:
    """column -> shards: each unit's ``--<column>`` option and every ``--shards COLUMN PATH...``."""
    from hardneg.augment.units import by_column

    aug = {u.column: getattr(args, u.column) for u in _BUILTIN_UNITS if getattr(args, u.column, None)}
    for column, *paths in args.shards or []:
        by_column(column)  # an unknown column: one line naming the known ones
        if not paths:
            raise ValueError(f"--shards {column}: no shard paths given")
        aug[column] = paths
    return aug


def _train(args: argparse.Namespace) -> int:
    from hardneg.train import methods
    from hardneg.train.run import run_train

    if args.configfile:  # a config's train.method_modules register the researcher's own methods
        from hardneg.config import load_config

        methods.load_modules(load_config(args.configfile).get("train", {}).get("method_modules"))
    if args.list_presets:
        print(json.dumps({n: p.settings for n, p in methods.presets().items()}, indent=2, sort_keys=True))
        return 0
    if args.list_methods:
        print(json.dumps([m.describe() for m in methods.methods().values()], indent=2))
        return 0
    _load_augmenters(args.augmenter, "--augmenter")
    settings = resolve_settings(args)
    if args.print_settings:
        print(json.dumps(settings.to_dict(), indent=2, sort_keys=True))
        print(f"needs columns: {settings.needed_columns() or 'none'}")
        return 0
    if not args.corpus or not args.out:
        raise ValueError("--corpus and --out are required to train")
    aug = _augment_shards(args)
    # in this process: under torchrun every process runs this command (train.nproc_per_node is
    # the workflow's way to start torchrun)
    summary = run_train(settings, args.corpus, args.out, augment=aug, senteval_dir=args.senteval_dir,
                        threads=args.threads, resume=not args.no_resume,
                        keep_checkpoints=args.keep_checkpoints, report_to=args.report_to)
    if summary:
        print(f"{settings.method} seed {settings.seed}: STS-B dev {summary['stsb_dev']} "
              f"(step {summary['best_step']} of {summary['steps']}); model in {Path(args.out) / 'model'}")
    return 0


def register(subparsers) -> None:
    from hardneg.train.methods import preset_names

    p = subparsers.add_parser(
        "train", help=f"train one method x seed ({', '.join(preset_names())})",
        description="Train a sentence encoder with a method preset; export a sentence-transformers folder "
                    "to OUT/model. Multi-GPU: torchrun --nproc_per_node N -m hardneg train ...",
    )
    p.add_argument("--method", help=f"preset name: {', '.join(preset_names())}, or one from train.method_modules "
                                    "in --configfile (see --list-presets)")
    p.add_argument("--init-model", help="starting encoder: hub id, folder, or package:NAME")
    p.add_argument("--seed", type=int, default=None,
                   help="default: the first of train.seeds in --configfile, else of the schema's "
                        f"train.seeds ({schema_default('train.seeds')[0]})")
    p.add_argument("--configfile", nargs="+", help="config.yaml [overlays]: uses the train section")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a train setting (repeatable); a method's own settings are nested under "
                        "its name: a dotted key sets one (method_settings.hicl.alpha=0.2; see --list-methods)")
    p.add_argument("--settings", help="a full settings JSON file (as written by the workflow)")
    p.add_argument("--corpus", nargs="+", help="corpus shards (id, text)")
    for unit in _BUILTIN_UNITS:  # one shard option per augmenter unit, named by its column
        p.add_argument(f"--{unit.column}", nargs="+", metavar="SHARD",
                       help=f"{unit.name} shards, one per corpus shard (column {unit.column}; {unit.producer})")
    p.add_argument("--shards", nargs="+", action="append", metavar=("COLUMN", "SHARD"),
                   help="any augmenter's shards by column, e.g. an augmenter of your own (repeatable)")
    p.add_argument("--augmenter", action="append", metavar="MODULE_OR_FILE",
                   help="an augmenter of your own to register (repeatable) (as the config's 'augmenters', docs/extending.md)")
    p.add_argument("--senteval-dir", help="SentEval folder: STS-B dev model selection (omit: keep the last step)")
    p.add_argument("--out", help="run folder: model/, metrics.jsonl, curve.png, summary.json")
    p.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint")
    p.add_argument("--keep-checkpoints", action="store_true", default=schema_default("train.keep_checkpoints"),
                   help="keep the resume state (OUT/work-*/: last.pt, best.pt) after the model is exported "
                        "(default: %(default)s, train.keep_checkpoints)")
    p.add_argument("--report-to", nargs="+", default=schema_default("train.report_to"), metavar="TRACKER",
                   help="experiment tracking: none, tensorboard (OUT/tensorboard/), wandb, mlflow, all "
                        "(default: %(default)s, train.report_to)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: torch's own; under torchrun: OMP_NUM_THREADS)")
    p.add_argument("--list-presets", action="store_true", help="print the method presets and exit")
    p.add_argument("--list-methods", action="store_true",
                   help="print the methods presets combine (paper, role, views, own settings under "
                        "method_settings.NAME with their defaults) and exit")
    p.add_argument("--print-settings", action="store_true", help="print the resolved settings and exit")
    p.set_defaults(func=_train)
