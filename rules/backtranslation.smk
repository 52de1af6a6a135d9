# Back-translation (OssCSE §4 Step 2): every pivot's round trip kept as a candidate, then the
# MER-window paraphrase selection (OssCSE Appendix A). One job per corpus shard; outputs keyed by
# the settings that change them (not batch sizes, timeouts). Paths: rules/functions/paths.smk.


include: "functions/backtranslation.smk"


rule backtranslate:
    """English -> pivot -> English for every configured pivot; every candidate kept."""
    input:
        corpus_shard("{shard}"),
    output:
        bt_candidates_shard("{shard}"),
    log:
        f"{LOGS}/backtranslate/{corpus_tag()}/{_BT_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/backtranslate/{corpus_tag()}/{_BT_KEY}/shard-{{shard}}.tsv"
    conda:
        CONDA_ENV
    threads: 1
    resources:
        gpu=1 if _BT_CFG["backend"] == "transformers" else 0,
        mem_mb=16000 if _BT_CFG["backend"] == "transformers" else 2000,
        runtime=720 if _BT_CFG["backend"] == "transformers" else 60,
    params:
        cfg=_BT_KEYED,
        # the backend's scheduling settings (Apertium: lines per call, timeout, retries): derived
        scheduling=derived(
            {
                k: _BT_CFG[_BT_CFG["backend"]][k]
                for k in _BT_SCHEDULING
                if k in _BT_CFG[_BT_CFG["backend"]]
            }
        ),
        code=code_version(
            "hardneg.augment.backtranslation.translate",
            "hardneg.augment.backtranslation.apertium",
            "hardneg.augment.backtranslation.seq2seq",
            "hardneg.augment.backtranslation.run",
            "hardneg.models",
        ),
    script:
        "../workflow/scripts/backtranslation.py"


rule select_paraphrase:
    """Keep the back-translation with MER in [mer_min, mer_max] chosen by the policy."""
    input:
        bt_candidates_shard("{shard}"),
    output:
        shard=paraphrase_shard("{shard}"),
        summary=paraphrase_shard("{shard}").replace(".parquet", ".json"),
    log:
        f"{LOGS}/select_paraphrase/{corpus_tag()}/{_PARA_KEY}/shard-{{shard}}.log",
    conda:
        CONDA_ENV
    params:
        cfg=_PARA_CFG,
        code=code_version(
            "hardneg.augment.backtranslation.paraphrase",
            "hardneg.augment.backtranslation.run",
            "hardneg.text",
        ),
    script:
        "../workflow/scripts/backtranslation_select.py"


localrules:
    osscse_all,


rule osscse_all:
    """The OssCSE augmenters only: `snakemake osscse_all` (every negation and paraphrase shard)."""
    input:
        _osscse_targets(),
