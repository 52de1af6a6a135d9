# Helpers and settings for rules/probe.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

_PROBE_CFG = config.get("probe", {})
_PROBE_SHARDS = SHARDS[: max(1, int(_PROBE_CFG.get("corpus_shards", 1)))]


def _probe_mlm():
    """The probe's masked LM: 'san' = the SAN MLM (rules/san.smk: san.mlm or the bootstrap one)."""
    m = _PROBE_CFG.get("mlm")
    if m == "san":
        if "BOOTSTRAP_MLM_DIR" not in globals():
            raise WorkflowError("probe.mlm: 'san' needs rules/san.smk (include it, or name a model)")
        return BOOTSTRAP_MLM_DIR if _USE_BOOTSTRAP else config.get("san", {}).get("mlm", "bert-base-uncased")
    return m


def _probe_inputs(wc):
    ins = dict(_eval_model_input(wc))  # the model `evaluate` scores (rules/evaluate.smk)
    ins["corpus"] = [f"{CORPUS_DIR}/shard-{s}.parquet" for s in _PROBE_SHARDS]
    if _PROBE_CFG.get("paraphrases", "shards") == "shards":
        if "paraphrase_shard" not in globals():
            raise WorkflowError("probe.paraphrases: 'shards' needs rules/osscse.smk (paraphrase_shard)")
        ins["paraphrases"] = [paraphrase_shard(s) for s in _PROBE_SHARDS]
    if _PROBE_CFG.get("mlm") == "san" and globals().get("_USE_BOOTSTRAP"):
        ins["mlm"] = BOOTSTRAP_MLM_DIR
    return ins


def probe_target(experiment, method, seed):
    """probe.json of one experiment/method/seed."""
    return f"results/eval/{experiment}/{method}/seed{seed}/probe.json"


@register_targets
def _probe_targets():
    """Baseline (seed 0, as `evaluate`) and every train.methods x train.seeds when training is included."""
    exp = config["experiment"]
    out = [probe_target(exp, "baseline", 0)]
    if "train_settings" in globals():
        tr = config.get("train", {})
        out += [probe_target(exp, m, s) for m in tr.get("methods", []) for s in tr.get("seeds", [config["seed"]])]
    return out
