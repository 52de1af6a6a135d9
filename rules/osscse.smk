# OssCSE augmenters (issue 5): negation, back-translation candidates, MER-filtered paraphrases.
# One job per corpus shard; outputs keyed by the parameters that change them (not batch sizes).

_NEG_CFG = config.get("negation", {})
_BT_CFG = config.get("backtranslation", {})
_PARA_CFG = config.get("paraphrase", {})
# Settings that never change the output stay out of the keys (batch sizes, processes, timeouts).
_NEG_KEY = "neg-" + short_hash({k: v for k, v in _NEG_CFG.items() if k not in ("batch_size", "n_process")})
_BT_KEY = "{}-{}-{}".format(
    _BT_CFG.get("backend", "transformers"),
    "_".join(p["name"] for p in _BT_CFG.get("pivots", [])),
    short_hash(
        {
            "backend": _BT_CFG.get("backend"),
            "pivots": _BT_CFG.get("pivots"),
            "max_chars": _BT_CFG.get("max_chars"),
            "opts": {
                k: v
                for k, v in (_BT_CFG.get(_BT_CFG.get("backend", "transformers")) or {}).items()
                if k not in ("batch_size", "batch_lines", "timeout_s", "retries", "device")
            },
        }
    ),
)
_PARA_KEY = f"{_BT_KEY}-mer{short_hash(_PARA_CFG)}"


# Contract helpers (other stages call them): the shard paths for the configured parameters.
# Negation shard for a corpus shard:
negation_shard = lambda shard: f"results/augment/negation/{corpus_tag()}/{_NEG_KEY}/shard-{shard}.parquet"
# Every back-translation candidate of a corpus shard (before MER selection):
bt_candidates_shard = lambda shard: f"results/augment/bt_candidates/{corpus_tag()}/{_BT_KEY}/shard-{shard}.parquet"
# Back-translation shard with the selected paraphrase:
paraphrase_shard = lambda shard: f"results/augment/backtranslation/{corpus_tag()}/{_PARA_KEY}/shard-{shard}.parquet"
_osscse_targets = lambda: [negation_shard(s) for s in SHARDS] + [paraphrase_shard(s) for s in SHARDS]
register_targets(_osscse_targets)


rule negate:
    """Negate every sentence of a corpus shard at its dependency ROOT (SNCSE rules)."""
    input:
        f"{CORPUS_DIR}/shard-{{shard}}.parquet",
    output:
        shard=negation_shard("{shard}"),
        summary=negation_shard("{shard}").replace(".parquet", ".json"),
    params:
        cfg=_NEG_CFG,
        code=code_version("hardneg.augment.negation"),
    threads: _NEG_CFG.get("n_process", 1)
    resources:
        mem_mb=2000 * _NEG_CFG.get("n_process", 1),
        runtime=60,
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/negate/{corpus_tag()}/{_NEG_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/negate/{corpus_tag()}/{_NEG_KEY}/shard-{{shard}}.tsv"
    script:
        "../workflow/scripts/negation.py"


rule backtranslate:
    """English -> pivot -> English for every configured pivot; every candidate kept."""
    input:
        f"{CORPUS_DIR}/shard-{{shard}}.parquet",
    output:
        bt_candidates_shard("{shard}"),
    params:
        cfg=_BT_CFG,
        code=code_version(
            "hardneg.augment.backtranslation.translate", "hardneg.augment.backtranslation.apertium",
            "hardneg.augment.backtranslation.seq2seq",
        ),
    threads: 1
    resources:
        gpu=1 if _BT_CFG.get("backend") == "transformers" else 0,
        mem_mb=16000 if _BT_CFG.get("backend") == "transformers" else 2000,
        runtime=720 if _BT_CFG.get("backend") == "transformers" else 60,
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/backtranslate/{corpus_tag()}/{_BT_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/backtranslate/{corpus_tag()}/{_BT_KEY}/shard-{{shard}}.tsv"
    script:
        "../workflow/scripts/backtranslation.py"


rule select_paraphrase:
    """Keep the back-translation with MER in [mer_min, mer_max] chosen by the policy."""
    input:
        bt_candidates_shard("{shard}"),
    output:
        shard=paraphrase_shard("{shard}"),
        summary=paraphrase_shard("{shard}").replace(".parquet", ".json"),
    params:
        cfg=_PARA_CFG,
        code=code_version("hardneg.augment.backtranslation.paraphrase", "hardneg.text"),
    conda:
        CONDA_ENV
    log:
        f"{LOGS}/select_paraphrase/{corpus_tag()}/{_PARA_KEY}/shard-{{shard}}.log",
    script:
        "../workflow/scripts/backtranslation_select.py"


localrules:
    osscse_all,


rule osscse_all:
    """Just this stage: `snakemake osscse_all` (every negation and paraphrase shard)."""
    input:
        _osscse_targets(),
