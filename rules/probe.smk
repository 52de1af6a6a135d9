# Transformation probe (OssCSE §3.1): similarity of paraphrase / negation / insertion /
# deletion / substitution / random to the original, for the same model the `evaluate` rule evaluates
# (method `baseline`: the untrained start encoder), on a fixed seeded probe set from the corpus shards.
# The probe set and its transformations (spaCy negation, MLM fills) depend on no encoder: rule
# probe_set makes them once, and each model's probe job only encodes and scores them.


include: "functions/probe.smk"


rule probe_set:
    """The probe set and its six transformations per sentence (model-independent, made once)."""
    input:
        unpack(_probe_set_inputs),
    output:
        rows=f"{PROBE_SET_DIR}/rows.parquet",
        meta=f"{PROBE_SET_DIR}/meta.json",
    log:
        f"{LOGS}/probe_set/{Path(PROBE_SET_DIR).name}.log",
    benchmark:
        f"{BENCH}/probe_set/{Path(PROBE_SET_DIR).name}.tsv"
    conda:
        CONDA_ENV
    threads: _EVAL_CFG["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        cfg={k: v for k, v in _PROBE_CFG.items() if k not in ("batch_size",)},
        mlm=lambda wc: _probe_mlm(),
        negation=_NEG_KEYED,
        backtranslation=_BT_KEYED,
        # scheduling of the negation and back-translation done here: derived, a change re-runs nothing
        scheduling=derived(
            {
                "negation": {k: _NEG_CFG[k] for k in _NEG_SCHEDULING},
                "backtranslation": {
                    k: _BT_CFG[_BT_CFG["backend"]][k]
                    for k in _BT_SCHEDULING
                    if k in _BT_CFG[_BT_CFG["backend"]]
                },
            }
        ),
        paraphrase=_PARA_CFG,
        device=_EVAL_CFG["device"],  # the MLM's device
        code=code_version(
            "hardneg.evaluate.probe",
            "hardneg.evaluate.probe_edits",
            "hardneg.evaluate.probe_mlm",
            "hardneg.evaluate.run",
            "hardneg.augment.negation.negate",
            "hardneg.models",
        ),
    script:
        "../workflow/scripts/probe_set.py"


rule probe:
    """OssCSE §3.1 transformation probe of one evaluated model: probe.json + per-row probe.parquet."""
    input:
        unpack(_eval_model_input),  # the model `evaluate` scores (rules/evaluate.smk)
        probe_rows=f"{PROBE_SET_DIR}/rows.parquet",
        probe_meta=f"{PROBE_SET_DIR}/meta.json",
    output:
        summary=f"{EVAL_DIR}/probe.json",
        pairs=f"{EVAL_DIR}/probe.parquet",
    log:
        f"{LOGS}/probe/{{experiment}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"{BENCH}/probe/{{experiment}}/{{method}}/seed{{seed}}.tsv"
    conda:
        CONDA_ENV
    threads: _EVAL_CFG["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        model=lambda wc, input: _eval_model_params(wc, input),
        max_length=_EVAL_CFG["max_length"],
        # derived on the CPU (changes no stored byte), watched on CUDA (rules/functions/paths.smk)
        batch_size=keyed_unless(_PROBE_CFG["batch_size"], unkeyed=not _ENCODE_BATCH_KEYED),
        device=_EVAL_CFG["device"],
        code=code_version(
            "hardneg.evaluate.probe",
            "hardneg.evaluate.run",
            "hardneg.encoders",
            "hardneg.models",
        ),
    script:
        "../workflow/scripts/probe.py"
