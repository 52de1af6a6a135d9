# Evaluation: STS (SentEval "all" conventions) and the Cont./Oppn. splits (OssCSE §3.3).
# The splits are a model-independent artifact keyed by their parameters; `evaluate` runs once per
# experiment/method/seed on the exported model (method `baseline`: the untrained start encoder).


include: "functions/evaluate.smk"


# An experiment's outputs are made from its own config only: results/train|eval/<other>/ are not
# this config's to build (and an ablation family's variants, one module each, never collide).
wildcard_constraints:
    method=r"[A-Za-z0-9_.+-]+",
    experiment=re.escape(config["experiment"]),


rule cont_oppn_splits:
    """Cont./Oppn. splits of STS12-16 subsets and STS-B (median score x median MER), with stats."""
    input:
        SENTEVAL_DIR,
    output:
        splits=f"{SPLITS_DIR}/splits.parquet",
        stats=f"{SPLITS_DIR}/stats.json",
    log:
        f"{LOGS}/cont_oppn_splits/{_SPLITS_KEY}.log",
    conda:
        CONDA_ENV
    params:
        cfg=_SPLITS_CFG,
        code=code_version(
            "hardneg.evaluate.splits",
            "hardneg.evaluate.run",
            "hardneg.data.senteval",
            "hardneg.text.mer",
        ),
    script:
        "../workflow/scripts/splits.py"


rule evaluate:
    """STS test figures, per-pair predictions and Cont./Oppn. figures of one trained model."""
    input:
        unpack(_eval_model_input),
        senteval=SENTEVAL_DIR,
        splits=f"{SPLITS_DIR}/splits.parquet",  # a path, not rules.<rule>: an ablation DAG lets one module make it
    output:
        sts=f"{EVAL_DIR}/sts.json",
        predictions=f"{EVAL_DIR}/predictions.parquet",
        cont_oppn=f"{EVAL_DIR}/cont_oppn.json",
    log:
        f"{LOGS}/evaluate/{{experiment}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/evaluate/{{experiment}}/{{method}}/seed{{seed}}.tsv"
    conda:
        CONDA_ENV
    threads: _EVAL_CFG["threads"]
    resources:
        gpu=1 if str(_EVAL_CFG["device"]).startswith("cuda") else 0,
        mem_mb=6000,
        runtime=60,
    params:
        model=lambda wc, input: _eval_model_params(wc, input),
        cfg={
            k: v
            for k, v in _EVAL_CFG.items()
            if k not in ("splits", "probe", "batch_size", "device", "threads")
        },
        # derived on the CPU (changes no stored byte), watched on CUDA (rules/functions/paths.smk)
        batch_size=keyed_unless(_EVAL_CFG["batch_size"], unkeyed=not _ENCODE_BATCH_KEYED),
        device=_EVAL_CFG["device"],
        code=code_version(
            "hardneg.evaluate", "hardneg.encoders", "hardneg.models", "hardneg.data.senteval"
        ),
    script:
        "../workflow/scripts/evaluate.py"


rule evaluate_plots:
    """Report plots of one evaluation: Cont./Oppn. bars per dataset, hard-pair similarities."""
    input:
        predictions=f"{EVAL_DIR}/predictions.parquet",
        cont_oppn=f"{EVAL_DIR}/cont_oppn.json",
    output:
        cont_oppn=f"{EVAL_DIR}/plots/cont_oppn.png",
        hard_pairs=f"{EVAL_DIR}/plots/hard_pairs.png",
    log:
        f"{LOGS}/evaluate_plots/{{experiment}}/{{method}}/seed{{seed}}.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("hardneg.evaluate.plots", "hardneg.evaluate.run", "hardneg.plotting"),
    script:
        "../workflow/scripts/evaluate_plots.py"
