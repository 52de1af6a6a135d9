# Helpers for rules/san.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths, keys and settings: rules/functions/paths.smk.

_SAN_NEGATION = _SAN_CFG["quality"]["postprocess"] == "negation"


# san.batch_size and san.chunk_rows reach the script as params derived from the output (a function
# of `output`): Snakemake leaves derived params out of its params re-run trigger, and the output's
# key holds them exactly when they can change a byte (any precision but fp32: hardneg.augment.san.key).
# So in fp32 a new batch size re-runs nothing; otherwise the output path itself changes.
def san_batch_size(wildcards, output):
    """san.batch_size for one SAN job (keyed in the output path unless fp32)."""
    return _SAN_CFG["batch_size"]


def san_chunk_rows(wildcards, output):
    """san.chunk_rows for one SAN job (keyed in the output path unless fp32)."""
    return _SAN_CFG["chunk_rows"]


def san_finish_workers(wildcards, output):
    """san.finish_workers for one SAN job (never keyed: it changes no byte)."""
    return _SAN_CFG["finish_workers"]


@register_targets
def _san_targets():
    out = [san_shard(s) for s in SHARDS] + [LEXICON]
    if _USE_BOOTSTRAP:
        out.append(BOOTSTRAP_MLM_DIR)
    return out
