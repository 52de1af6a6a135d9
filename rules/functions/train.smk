# Helpers for rules/train.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths and settings: rules/functions/paths.smk.

from hardneg.train.model_card import hub_datasets
from hardneg.train.presets import METHODS as TRAIN_METHODS, settings_from_config

# column a method needs -> the path helper (rules/functions/paths.smk) giving its shard
_AUG_SHARD = {"san": san_shard, "negation": negation_shard, "paraphrase": paraphrase_shard, "mined": mined_shard}


def train_settings(method, seed, experiment=None):
    """Resolved TrainSettings of one method x seed (preset <- train.overrides <- train.presets);
    a teacher given as {method: m} gets model: that method's exported model in this workflow."""
    try:
        s = settings_from_config(_TRAIN_CFG, method, int(seed))
    except (ValueError, KeyError) as exc:
        raise WorkflowError(f"train (method {method}, seed {seed}): {exc}") from None
    if s.teachers:
        s.teachers = [
            _teacher_model(method, seed, experiment, i, t) for i, t in enumerate(s.teachers)
        ]
    return s


def _teacher_model(method, seed, experiment, i, t):
    """A method teacher -> {..., model: results/train/<exp>/<teacher method>/seed<seed>/model}."""
    if "method" not in t or "model" in t:
        return dict(t)
    if t["method"] not in TRAIN_METHODS:
        raise WorkflowError(
            f"train (method {method}): train setting 'teachers[{i}]': method {t['method']!r} is "
            f"not a preset (known: {', '.join(TRAIN_METHODS)})"
        )
    exp = experiment or config["experiment"]
    teacher_seed = t["seed"] if "seed" in t else seed  # a teacher's own seed, else the run's
    model = f"{train_dir(exp, t['method'], teacher_seed)}/model"
    return {**t, "model": model}


def _train_inputs(wc):
    s = train_settings(wc.method, wc.seed, wc.experiment)
    inputs = {
        "corpus": corpus_shards(),
        "senteval": SENTEVAL_DIR,
    }
    # a teacher trained in this workflow is an input: the DAG trains it first (SAN Eq. 6 teachers)
    for i, t in enumerate(s.teachers or []):
        if "method" in t:
            inputs[f"teacher{i}"] = t["model"]
    for col in s.needed_columns():
        inputs[col] = [_AUG_SHARD[col](shard) for shard in SHARDS]
    return inputs


@register_targets
def _train_targets():
    """The evaluation and model card of every method x seed of train.methods / train.seeds."""
    exp = config["experiment"]
    return [
        t
        for method, seed in train_runs()
        for t in (
            eval_targets(exp, method, seed),
            f"{EVAL_DIR}/model_card.md".format(experiment=exp, method=method, seed=seed),
        )
    ]


def train_keep_checkpoints(wildcards, output):
    """train.keep_checkpoints (never a re-run trigger: it changes no output)."""
    return _TRAIN_CFG["keep_checkpoints"]


def train_report_to(wildcards, output):
    """train.report_to (never a re-run trigger: tracking changes no output)."""
    return _TRAIN_CFG["report_to"]
