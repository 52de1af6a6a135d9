# Mined hard negatives: the corpus embeddings once (keyed by corpus + encoder settings), then one
# mining job per corpus shard (its rows against the whole corpus), keyed by the selection
# settings. Paths: rules/functions/paths.smk; semantics: hardneg.augment.mine.settings.


rule mine:
    """Every mined-negative shard of the configured corpus (`snakemake ... mine`)."""
    input:
        [mined_shard(s) for s in SHARDS],


rule mine_embed:
    """Encode every corpus row with mine.encoder: the embeddings every mining setting shares."""
    input:
        corpus_shards(),
    output:
        embeddings=f"{MINE_EMBED_DIR}/embeddings.npy",
        manifest=f"{MINE_EMBED_DIR}/embeddings.json",
    log:
        f"{LOGS}/mine_embed/{corpus_tag()}/{_MINE_EMBED_KEY}.log",
    benchmark:
        f"{BENCH}/mine_embed/{corpus_tag()}/{_MINE_EMBED_KEY}.tsv"
    conda:
        CONDA_ENV
    threads: _MINE_CFG["threads"]
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        cfg=_MINE_EMBED_KEYED,
        # the device changes bytes only off the CPU (bf16 autocast): keyed there, scheduling here
        device=keyed_unless(_MINE_CFG["device"], _MINE_CFG["device"] == "cpu"),
        code=code_version("hardneg.augment.mine.encode", "hardneg.encoders", "hardneg.models"),
    script:
        "../workflow/scripts/mine_embed.py"


rule mine_shard:
    """Mine negatives for the rows of one corpus shard among the whole corpus."""
    input:
        embeddings=f"{MINE_EMBED_DIR}/embeddings.npy",
        manifest=f"{MINE_EMBED_DIR}/embeddings.json",
        corpus=corpus_shards(),
        shard=corpus_shard("{shard}"),
    output:
        shard=mined_shard("{shard}"),
        summary=mined_shard("{shard}").replace(".parquet", ".json"),
    log:
        f"{LOGS}/mine/{corpus_tag()}/{_MINE_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/mine/{corpus_tag()}/{_MINE_KEY}/shard-{{shard}}.tsv"
    conda:
        CONDA_ENV
    threads: _MINE_CFG["threads"]
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        cfg=_MINE_KEYED,
        embed_cfg=_MINE_EMBED_KEYED,
        seed=config["seed"],
        code=code_version(
            "hardneg.augment.mine.search",
            "hardneg.augment.mine.select",
            "hardneg.augment.mine.shard",
            "hardneg.augment.mine.settings",
            "hardneg.augment.mine.run",
        ),
    script:
        "../workflow/scripts/mine.py"
