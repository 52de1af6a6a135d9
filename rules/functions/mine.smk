# Helpers for rules/mine.smk (kept apart: Snakemake's lint wants functions out of files with
# rules). Paths, keys and settings: rules/functions/paths.smk.


def mined_shards_used():
    """Every mined shard when a configured training run reads the mined column, else none (so a
    workflow without such a method never mines; `snakemake ... mine` builds them on request)."""
    if any("mined" in train_settings(m, s).needed_columns() for m, s in train_runs()):
        return [mined_shard(s) for s in SHARDS]
    return []
