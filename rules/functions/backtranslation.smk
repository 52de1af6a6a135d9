# Helpers for rules/backtranslation.smk (kept apart: Snakemake's lint wants functions out of files
# with rules). Paths, keys and settings: rules/functions/paths.smk.


@register_targets
def _osscse_targets():
    """The OssCSE augmenters' shards: every negation and selected-paraphrase shard."""
    return [negation_shard(s) for s in SHARDS] + [paraphrase_shard(s) for s in SHARDS]
