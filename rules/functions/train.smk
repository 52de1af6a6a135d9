# Helpers and settings for rules/train.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

from hardneg.train.presets import METHODS as TRAIN_METHODS, settings_from_config

_TRAIN_CFG = config.get("train", {})
TRAIN_DIR = "results/train/{experiment}/{method}/seed{seed}"
# column a method needs -> the helper (defined by rules/san.smk, rules/osscse.smk) giving its shard
_AUG_HELPERS = {"san": "san_shard", "negation": "negation_shard", "paraphrase": "paraphrase_shard"}


def train_settings(method, seed):
    """Resolved TrainSettings of one method x seed (preset <- train.overrides <- train.presets)."""
    try:
        return settings_from_config(_TRAIN_CFG, method, int(seed))
    except (ValueError, KeyError) as exc:
        raise WorkflowError(f"train (method {method}, seed {seed}): {exc}") from None


def _train_inputs(wc):
    s = train_settings(wc.method, wc.seed)
    inputs = {
        "corpus": expand(f"{CORPUS_DIR}/shard-{{shard}}.parquet", shard=SHARDS),
        "senteval": SENTEVAL_DIR,
    }
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
