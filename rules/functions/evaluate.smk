# Helpers for rules/evaluate.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths and settings: rules/functions/paths.smk.


def baseline_model():
    """The untrained starting encoder: evaluate.baseline_model, else train.init_model."""
    return _EVAL_CFG["baseline_model"] or _TRAIN_CFG["init_model"]


def _eval_model_input(wc):
    if wc.method == "baseline":
        return []
    return {"model": directory(f"{train_dir(wc.experiment, wc.method, wc.seed)}/model")}


def _eval_model_params(wc, input):
    if wc.method == "baseline":
        return {
            "model": baseline_model(),
            "pooler": _EVAL_CFG["baseline_pooler"],
            "template": _EVAL_CFG["baseline_template"],
        }
    # an exported sentence-transformers folder carries its own pooler
    return {"model": input.model, "pooler": "avg", "template": None}


@register_targets
def _evaluate_targets():
    base = EVAL_DIR.format(experiment=config["experiment"], method="baseline", seed=0)
    return [
        f"{SPLITS_DIR}/stats.json",
        f"{base}/sts.json",
        f"{base}/plots/cont_oppn.png",
        f"{base}/plots/hard_pairs.png",
    ]
