# Training (issue 6): one job per method x seed from the corpus + augmentation shards it needs;
# the best STS-B dev checkpoint is exported as a sentence-transformers folder, then `evaluate`.
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


rule train:
    """Contrastive training of one method x seed; resumes from its checkpoint if killed."""
    input:
        unpack(_train_inputs),
    output:
        model=directory(f"{TRAIN_DIR}/model"),
        metrics=f"{TRAIN_DIR}/metrics.jsonl",
        curve=f"{TRAIN_DIR}/curve.png",
        summary=f"{TRAIN_DIR}/summary.json",
    wildcard_constraints:
        method="|".join(TRAIN_METHODS),
    params:
        settings=lambda wc: train_settings(wc.method, wc.seed).to_dict(),
        nproc_per_node=_TRAIN_CFG.get("nproc_per_node", 1),
        code=code_version("hardneg.train", "hardneg.encoders", "hardneg.evaluate.sts"),
    threads: _TRAIN_CFG.get("threads", 2)
    resources:
        gpu=_TRAIN_CFG.get("gpus", 1),
        runtime=_TRAIN_CFG.get("runtime", 600),
        mem_mb=_TRAIN_CFG.get("mem_mb", 32000),
    log:
        f"{LOGS}/train/{{experiment}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/train/{{experiment}}/{{method}}/seed{{seed}}.tsv"
    script:
        "../workflow/scripts/train.py"


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
