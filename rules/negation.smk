# Negation (OssCSE §4 Step 1, SNCSE's rule by default): one job per corpus shard; the output is keyed
# by the settings that change it (not batch size or processes). Paths: rules/functions/paths.smk.


rule negate:
    """Negate every sentence of a corpus shard at its dependency ROOT (SNCSE rules)."""
    input:
        corpus_shard("{shard}"),
    output:
        shard=negation_shard("{shard}"),
        summary=negation_shard("{shard}").replace(".parquet", ".json"),
    log:
        f"{LOGS}/negate/{corpus_tag()}/{_NEG_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/negate/{corpus_tag()}/{_NEG_KEY}/shard-{{shard}}.tsv"
    conda:
        CONDA_ENV
    threads: _NEG_CFG["n_process"]
    resources:
        mem_mb=2000 * _NEG_CFG["n_process"],
        runtime=60,
    params:
        cfg=_NEG_KEYED,
        # scheduling: derived, a change re-runs nothing (n_process reaches the script as threads)
        batch_size=derived(_NEG_CFG["batch_size"]),
        code=code_version("hardneg.augment.negation"),
    script:
        "../workflow/scripts/negation.py"
