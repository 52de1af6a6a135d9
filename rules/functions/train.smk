# Helpers and settings for rules/train.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

from hardneg.train.presets import METHODS as TRAIN_METHODS, settings_from_config

_TRAIN_CFG = config.get("train", {})
TRAIN_DIR = "results/train/{experiment}/{method}/seed{seed}"
# column a method needs -> the helper (defined by rules/san.smk, rules/osscse.smk) giving its shard
_AUG_HELPERS = {"san": "san_shard", "negation": "negation_shard", "paraphrase": "paraphrase_shard"}


def train_settings(method, seed, experiment=None):
    """Resolved TrainSettings of one method x seed (preset <- train.overrides <- train.presets);
    a teacher given as {method: m} gets model: that method's exported model in this workflow."""
    try:
        s = settings_from_config(_TRAIN_CFG, method, int(seed))
    except (ValueError, KeyError) as exc:
        raise WorkflowError(f"train (method {method}, seed {seed}): {exc}") from None
    if s.teachers:
        s.teachers = [_teacher_model(method, seed, experiment, i, t) for i, t in enumerate(s.teachers)]
    return s


def _teacher_model(method, seed, experiment, i, t):
    """A method teacher -> {..., model: results/train/<exp>/<teacher method>/seed<seed>/model}."""
    if "method" not in t or "model" in t:
        return dict(t)
    if t["method"] not in TRAIN_METHODS:
        raise WorkflowError(f"train (method {method}): train setting 'teachers[{i}]': method {t['method']!r} is "
                            f"not a preset (known: {', '.join(TRAIN_METHODS)})")
    exp = experiment or config["experiment"]
    model = f"{TRAIN_DIR}/model".format(experiment=exp, method=t["method"], seed=t.get("seed", seed))
    return {**t, "model": model}


def _train_inputs(wc):
    s = train_settings(wc.method, wc.seed, wc.experiment)
    inputs = {
        "corpus": expand(f"{CORPUS_DIR}/shard-{{shard}}.parquet", shard=SHARDS),
        "senteval": SENTEVAL_DIR,
    }
    # a teacher trained in this workflow is an input: the DAG trains it first (SAN Eq. 6 teachers)
    for i, t in enumerate(s.teachers or []):
        if "method" in t:
            inputs[f"teacher{i}"] = t["model"]
    for col in s.needed_columns():
        helper = globals().get(_AUG_HELPERS[col])
        if helper is None:
            raise WorkflowError(f"train method {wc.method} needs column '{col}', but {_AUG_HELPERS[col]}() "
                                f"is not defined: include the rule file that makes it")
        inputs[col] = [helper(shard) for shard in SHARDS]
    return inputs


@register_targets
def _train_targets():
    """Every method x seed of train.methods / train.seeds: its evaluation (or, without the
    evaluate rule, the trained model itself)."""
    exp = config["experiment"]
    have_eval = "eval_targets" in globals()
    out = []
    for method in _TRAIN_CFG.get("methods", []):
        for seed in _TRAIN_CFG.get("seeds", [config["seed"]]):
            if have_eval:
                out.append(eval_targets(exp, method, seed))
            else:
                out.append(f"results/train/{exp}/{method}/seed{seed}/summary.json")
    return out
