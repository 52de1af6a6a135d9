# Helpers for rules/report.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths and settings: rules/functions/paths.smk.


report: "../../workflow/report/workflow.rst"


def _runs():
    """(method, seed) of every evaluated run: baseline (seed 0) + train.methods x train.seeds."""
    return [("baseline", 0)] + [(m, int(s)) for m, s in train_runs()]


def _report_inputs(wildcards):
    exp = config["experiment"]
    ins = {
        "sts": [],
        "cont_oppn": [],
        "predictions": [],
        "metrics": [],
        "summaries": [],
        "augment": [],
        "after": [],
    }
    for method, seed in _runs():
        run = EVAL_DIR.format(experiment=exp, method=method, seed=seed)
        ins["sts"].append(f"{run}/sts.json")
        ins["cont_oppn"].append(f"{run}/cont_oppn.json")
        ins["predictions"].append(f"{run}/predictions.parquet")  # the one-seed paired bootstrap
        if method != "baseline":
            ins["metrics"].append(f"{train_dir(exp, method, seed)}/metrics.jsonl")
            ins["summaries"].append(f"{train_dir(exp, method, seed)}/summary.json")
    used = {c for m, s in train_runs() for c in train_settings(m, s).needed_columns()}
    for unit in augmenter_units():  # every augmenter's shards, by its unit's path helper
        if not unit.on_demand or unit.column in used:  # on demand: only when a run reads them
            ins["augment"] += augmenter_shards(unit)
    # Everything else the run makes, so benchmarks/ is complete when the tables are built.
    ins["after"] = [t for f in _TARGET_FUNCS if f is not _report_targets for t in f()]
    return ins


@register_targets
def _report_targets():
    return [f"{REPORT_DIR}/summary.json"]
