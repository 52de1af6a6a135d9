# Evaluation (issue 3): STS (SentEval "all" conventions) and the Cont./Oppn. splits (OssCSE §3.3).
# The splits are a model-independent artifact keyed by their parameters; `evaluate` runs once per
# experiment/method/seed on the exported model (method `baseline`: the untrained start encoder).

_EVAL_CFG = config.get("evaluate", {})
_SPLITS_CFG = _EVAL_CFG.get("splits", {})
_SPLITS_KEY = "splits-" + short_hash(_SPLITS_CFG)
SPLITS_DIR = f"results/eval/splits/{_SPLITS_KEY}"
EVAL_DIR = "results/eval/{experiment}/{method}/seed{seed}"


wildcard_constraints:
    method=r"[A-Za-z0-9_.+-]+",
    experiment=r"[A-Za-z0-9_.-]+",


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


rule cont_oppn_splits:
    """Cont./Oppn. splits of STS12-16 subsets and STS-B (median score x median MER), with stats."""
    input:
        SENTEVAL_DIR,
    output:
        splits=f"{SPLITS_DIR}/splits.parquet",
        stats=f"{SPLITS_DIR}/stats.json",
    params:
        cfg=_SPLITS_CFG,
        code=code_version("hardneg.evaluate.splits", "hardneg.data.senteval", "hardneg.text.mer"),
    log:
        f"{LOGS}/cont_oppn_splits/{_SPLITS_KEY}.log",
    script:
        "../workflow/scripts/splits.py"


rule evaluate:
    """STS test figures, per-pair predictions and Cont./Oppn. figures of one trained model."""
    input:
        unpack(_eval_model_input),
        senteval=SENTEVAL_DIR,
        splits=rules.cont_oppn_splits.output.splits,
    output:
        sts=f"{EVAL_DIR}/sts.json",
        predictions=f"{EVAL_DIR}/predictions.parquet",
        cont_oppn=f"{EVAL_DIR}/cont_oppn.json",
    params:
        model=lambda wc, input: _eval_model_params(wc, input),
        cfg={k: v for k, v in _EVAL_CFG.items() if k not in ("splits", "probe", "batch_size", "device")},
        batch_size=_EVAL_CFG.get("batch_size", 128),
        device=_EVAL_CFG.get("device"),
        code=code_version("hardneg.evaluate", "hardneg.encoders", "hardneg.data.senteval"),
    threads: 2
    resources:
        gpu=1 if _EVAL_CFG.get("device") not in (None, "cpu") and str(_EVAL_CFG.get("device")).startswith("cuda") else 0,
        mem_mb=6000,
        runtime=60,
    log:
        f"{LOGS}/evaluate/{{experiment}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/evaluate/{{experiment}}/{{method}}/seed{{seed}}.tsv"
    script:
        "../workflow/scripts/evaluate.py"


rule evaluate_plots:
    """Report plots of one evaluation: Cont./Oppn. bars per dataset, hard-pair similarities."""
    input:
        predictions=f"{EVAL_DIR}/predictions.parquet",
        cont_oppn=f"{EVAL_DIR}/cont_oppn.json",
    output:
        cont_oppn=f"{EVAL_DIR}/plots/cont_oppn.png",
        hard_pairs=f"{EVAL_DIR}/plots/hard_pairs.png",
    params:
        code=code_version("hardneg.evaluate.plots"),
    log:
        f"{LOGS}/evaluate_plots/{{experiment}}/{{method}}/seed{{seed}}.log",
    script:
        "../workflow/scripts/evaluate_plots.py"


def eval_targets(experiment, method, seed):
    """sts.json of one experiment/method/seed (for other stages' target lists)."""
    return f"results/eval/{experiment}/{method}/seed{seed}/sts.json"


@register_targets
def _evaluate_targets():
    base = EVAL_DIR.format(experiment=config["experiment"], method="baseline", seed=0)
    return [f"{SPLITS_DIR}/stats.json", f"{base}/sts.json", f"{base}/plots/cont_oppn.png",
            f"{base}/plots/hard_pairs.png"]
