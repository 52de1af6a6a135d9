# Helpers and settings for rules/report.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

report: "../../workflow/report/workflow.rst"


def _runs():
    """(method, seed) of every evaluated run: baseline (seed 0) + train.methods x train.seeds."""
    runs = [("baseline", 0)] if "eval_targets" in globals() else []
    if "train_settings" in globals():
        tr = config.get("train", {})
        runs += [(m, int(s)) for m in tr.get("methods", []) for s in tr.get("seeds", [config["seed"]])]
    return runs


def _report_inputs(wildcards):
    exp = config["experiment"]
    ins = {"sts": [], "cont_oppn": [], "metrics": [], "summaries": [], "augment": [], "after": []}
    for method, seed in _runs():
        run = f"results/eval/{exp}/{method}/seed{seed}"
        if "eval_targets" in globals():
            ins["sts"].append(f"{run}/sts.json")
            ins["cont_oppn"].append(f"{run}/cont_oppn.json")
        if method != "baseline":
            ins["metrics"].append(f"results/train/{exp}/{method}/seed{seed}/metrics.jsonl")
            ins["summaries"].append(f"results/train/{exp}/{method}/seed{seed}/summary.json")
    for helper in ("san_shard", "negation_shard", "paraphrase_shard"):
        if helper in globals():
            ins["augment"] += [globals()[helper](s) for s in SHARDS]
    # Everything else the run makes, so benchmarks/ is complete when the tables are built.
    ins["after"] = [t for f in _TARGET_FUNCS if f is not _report_targets for t in f()]
    return ins


@register_targets
def _report_targets():
    return [f"{REPORT_DIR}/summary.json"]
