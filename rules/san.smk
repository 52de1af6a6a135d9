# SAN: POS lexicon -> (optional MLM bootstrap) -> mask-predict negatives, one job per shard.
# Outputs are keyed by the parameters that change them (threads, GPUs stay out; batch size, chunking too in fp32).


include: "functions/san.smk"


rule lexicon:
    """One POS tag, Table 2 score and masking probability per vocabulary id of the MLM's tokenizer."""
    input:
        corpus=corpus_shards() if _LEX_CFG["mode"] == "corpus" else [],
        reference=[_LEX_CFG["reference"]] if _LEX_CFG["reference"] else [],
        tags_file=[_LEX_CFG["file"]] if _LEX_CFG["mode"] == "file" else [],
    output:
        lexicon=LEXICON,
        manifest=f"{LEXICON}.manifest.json",
    log:
        f"{LOGS}/lexicon/{_LEX_KEY}.log",
    benchmark:
        f"{BENCH}/lexicon/{_LEX_KEY}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        cfg=_LEX_CFG,
        tokenizer=_LEX_TOKENIZER,
        code=code_version(
            "hardneg.augment.san.lexicon", "hardneg.augment.san.run", "hardneg.models"
        ),
    script:
        "../workflow/scripts/lexicon.py"


rule bootstrap_mlm:
    """Fit a masked-LM head (+ top layers) on the pretrained encoder over the corpus shards, or over
    every line of the corpus file minus the STS/SICK sentences (bootstrap_mlm.text: source_file)."""
    input:
        corpus=corpus_shards(),
        source_file=(
            [f"data/downloads/{config['data']['corpus_file']}"]
            if _BOOT_CFG["text"] == "source_file"
            else []
        ),
        senteval=[SENTEVAL_DIR] if _BOOT_CFG["text"] == "source_file" else [],
    output:
        model=directory(BOOTSTRAP_MLM_DIR),
    log:
        f"{LOGS}/bootstrap_mlm/{corpus_tag()}/{_BOOT_KEY}.log",
    benchmark:
        f"{BENCH}/bootstrap_mlm/{corpus_tag()}/{_BOOT_KEY}.tsv"
    conda:
        CONDA_ENV
    threads: _BOOT_CFG["threads"]
    resources:
        mem_mb=6000,
        runtime=120,
    params:
        cfg={k: v for k, v in _BOOT_CFG.items() if k != "threads"},
        seed=config["seed"],
        code=code_version(
            "hardneg.augment.san.bootstrap_mlm", "hardneg.augment.san.run", "hardneg.models"
        ),
    script:
        "../workflow/scripts/bootstrap_mlm.py"


rule san:
    """K mask-predict iterations per sentence of one corpus shard (SAN §3.1)."""
    input:
        shard=corpus_shard("{shard}"),
        lexicon=LEXICON,
        mlm=[BOOTSTRAP_MLM_DIR] if _USE_BOOTSTRAP else [],
        negation=lambda wc: [negation_shard(wc.shard)] if _SAN_NEGATION else [],
    output:
        shard=san_shard("{shard}"),
        stats=san_shard("{shard}").replace(".parquet", ".json"),
    log:
        f"{LOGS}/san/{corpus_tag()}/{_SAN_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/san/{corpus_tag()}/{_SAN_KEY}/shard-{{shard}}.tsv"
    conda:
        CONDA_ENV
    threads: _SAN_CFG["threads"]
    resources:
        gpu=_SAN_CFG["gpus"],
        mem_mb=8000,
        runtime=240,
    params:
        # the settings that change the output (hardneg.augment.san.key); threads and gpus never do
        cfg=_SAN_KEYED,
        # keyed only when they can change the output (not in fp32): derived params, which do not
        # trigger a re-run (rules/functions/san.smk)
        batch_size=san_batch_size,
        chunk_rows=san_chunk_rows,
        finish_workers=san_finish_workers,
        # the bootstrap MLM folder when it is an input (derived from `input`), else a hub name / path
        mlm=lambda wildcards, input: input.mlm[0] if input.mlm else _MLM,
        seed=config["seed"],
        code=code_version(
            "hardneg.augment.san.mask_predict",
            "hardneg.augment.san.fill",
            "hardneg.augment.san.rng",
            "hardneg.augment.quality",
            "hardneg.augment.san.lexicon",
            "hardneg.augment.san.run",
            "hardneg.models",
        ),
    script:
        "../workflow/scripts/san.py"


localrules:
    san_all,


rule san_all:
    """Every SAN shard of the configured corpus (a convenience target: snakemake san_all)."""
    input:
        _san_targets(),
