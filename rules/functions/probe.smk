# Helpers for rules/probe.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths and settings: rules/functions/paths.smk.

_PROBE_SHARDS = SHARDS[: max(1, int(_PROBE_CFG["corpus_shards"]))]


def _probe_mlm():
    """The probe's masked LM: 'san' = the SAN MLM (san.mlm, or the bootstrap_mlm rule's output)."""
    if _PROBE_CFG["mlm"] == "san":
        return _MLM
    return _PROBE_CFG["mlm"]


def _probe_set_inputs(wc):
    ins = {"corpus": [corpus_shard(s) for s in _PROBE_SHARDS]}
    if _PROBE_CFG["paraphrases"] == "shards":
        ins["paraphrases"] = [paraphrase_shard(s) for s in _PROBE_SHARDS]
    if _PROBE_CFG["mlm"] == "san" and _USE_BOOTSTRAP:
        ins["mlm"] = BOOTSTRAP_MLM_DIR
    return ins


@register_targets
def _probe_targets():
    """Baseline (seed 0, as `evaluate`) and every train.methods x train.seeds."""
    exp = config["experiment"]
    return [probe_target(exp, "baseline", 0)] + [probe_target(exp, m, s) for m, s in train_runs()]
