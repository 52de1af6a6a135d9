# Helpers and settings for rules/evaluate.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

_EVAL_CFG = config.get("evaluate", {})
_SPLITS_CFG = _EVAL_CFG.get("splits", {})
_SPLITS_KEY = "splits-" + short_hash(_SPLITS_CFG)
SPLITS_DIR = f"results/eval/splits/{_SPLITS_KEY}"
EVAL_DIR = "results/eval/{experiment}/{method}/seed{seed}"




def baseline_model():
    """The untrained starting encoder: evaluate.baseline_model, else train.init_model."""
    model = _EVAL_CFG.get("baseline_model") or config.get("train", {}).get("init_model")
    if not model:
        raise WorkflowError("evaluate: set evaluate.baseline_model or train.init_model")
    return model


def _eval_model_input(wc):
    if wc.method == "baseline":
        return []
    return {"model": directory(f"results/train/{wc.experiment}/{wc.method}/seed{wc.seed}/model")}


def _eval_model_params(wc, input):
    if wc.method == "baseline":
        return {"model": baseline_model(), "pooler": _EVAL_CFG.get("baseline_pooler", "avg"),
                "template": _EVAL_CFG.get("baseline_template")}
    # an exported sentence-transformers folder carries its own pooler
    return {"model": input.model, "pooler": "avg", "template": None}


def eval_targets(experiment, method, seed):
    """sts.json of one experiment/method/seed (for other stages' target lists)."""
    return f"results/eval/{experiment}/{method}/seed{seed}/sts.json"


@register_targets
def _evaluate_targets():
    base = EVAL_DIR.format(experiment=config["experiment"], method="baseline", seed=0)
    return [f"{SPLITS_DIR}/stats.json", f"{base}/sts.json", f"{base}/plots/cont_oppn.png",
            f"{base}/plots/hard_pairs.png"]
