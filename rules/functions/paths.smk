# Every stage's output paths, in one place (included before any rule file, so rule files never
# probe each other). Outputs are keyed by the parameters that change them: a key is a short hash
# of the stage's settings minus those that never change a byte (threads, batch sizes, ...).
# The config is complete here: hardneg.config.validate filled the schema's defaults.

from hardneg.augment.mine.settings import embed_keyed as _mine_embed_keyed
from hardneg.augment.mine.settings import shard_keyed as _mine_shard_keyed
from hardneg.augment.san.key import keyed_settings as _san_keyed_settings

# --- data (rules/data.smk)
SENTEVAL_DIR = "data/senteval"


def corpus_tag():
    c = config["corpus"]
    src = Path(config["data"]["corpus_file"]).stem
    dedupe = "" if c["dedupe"] else "-nodedupe"
    return f"{src}-n{c['max_sentences']}-ss{c['shard_size']}{dedupe}"


CORPUS_DIR = f"results/corpus/{corpus_tag()}"


def corpus_shard(shard):
    """Corpus shard NNN (contract path)."""
    return f"{CORPUS_DIR}/shard-{shard}.parquet"


def corpus_shards():
    """Every corpus shard of the configured corpus."""
    return [corpus_shard(s) for s in SHARDS]


# --- SAN (rules/san.smk): lexicon, bootstrap MLM, mask-predict shards
_LEX_CFG = config["lexicon"]
_SAN_CFG = config["san"]
_BOOT_CFG = config["bootstrap_mlm"]
_SAN_KEYED = _san_keyed_settings(_SAN_CFG)  # batch_size, chunk_rows keyed unless precision is fp32
_USE_BOOTSTRAP = _SAN_CFG["mlm"] == "bootstrap"
_BOOT_KEY = f"boot-{short_hash({k: v for k, v in _BOOT_CFG.items() if k != 'threads'} | {'seed': config['seed']})}"
BOOTSTRAP_MLM_DIR = f"results/mlm/{corpus_tag()}/{_BOOT_KEY}"
# The lexicon depends on the MLM's tokenizer: a bootstrap MLM shares its base encoder's tokenizer,
# so the lexicon never waits for (or re-runs after) MLM training.
_LEX_TOKENIZER = _BOOT_CFG["base"] if _USE_BOOTSTRAP else _SAN_CFG["mlm"]
_LEX_KEYED = {k: v for k, v in _LEX_CFG.items() if k != "reference"} | {"tokenizer": _LEX_TOKENIZER}
if _LEX_CFG["mode"] == "corpus":
    _LEX_KEYED["corpus"] = corpus_tag()
if _LEX_CFG["mode"] == "file":
    # keyed by the file's content, not its path: an edited file re-runs the rule
    # (lexicon.file is there: hardneg.config checks it for mode 'file')
    _LEX_KEYED["file"] = file_sha256(_LEX_CFG["file"])
_LEX_KEY = f"{_LEX_CFG['mode']}-{short_hash(_LEX_KEYED)}"
LEXICON = f"results/lexicon/{_LEX_KEY}/lexicon.parquet"
_MLM = BOOTSTRAP_MLM_DIR if _USE_BOOTSTRAP else _SAN_CFG["mlm"]
_SAN_KEY = "k{}-{}".format(
    _SAN_CFG["iterations"],
    short_hash(
        _SAN_KEYED
        | {
            "mlm": _BOOT_KEY if _USE_BOOTSTRAP else _MLM,
            "lexicon": _LEX_KEY,
            "seed": config["seed"],
        }
    ),
)


@shard_helper
def san_shard(shard):
    """SAN shard for a corpus shard, for the configured parameters (contract path)."""
    return f"results/augment/san/{corpus_tag()}/{_SAN_KEY}/shard-{shard}.parquet"


# --- negation (rules/negation.smk)
_NEG_CFG = config["negation"]
# scheduling only (nlp.pipe batch size and processes): never change a byte, never keyed
_NEG_SCHEDULING = ("batch_size", "n_process")
_NEG_KEYED = {k: v for k, v in _NEG_CFG.items() if k not in _NEG_SCHEDULING}
_NEG_KEY = f"neg-{short_hash(_NEG_KEYED)}"


@shard_helper
def negation_shard(shard):
    """Negation shard for a corpus shard (contract path)."""
    return f"results/augment/negation/{corpus_tag()}/{_NEG_KEY}/shard-{shard}.parquet"


# --- back-translation and paraphrase selection (rules/backtranslation.smk)
_BT_CFG = config["backtranslation"]
_PARA_CFG = config["paraphrase"]
# Backend settings that schedule the work, left out of the path key. Apertium's translate line by
# line (one output line per input line), so lines per call, timeout and retries change no byte; the
# transformers backend's batch size and device are out of the path key too but stay a watched
# param (rules/backtranslation.smk): padded beam search rounds by batch shape and device.
_BT_UNKEYED = ("batch_size", "batch_lines", "timeout_s", "retries", "device")
_BT_SCHEDULING = {"apertium": ("batch_lines", "timeout_s", "retries"), "transformers": ()}[
    _BT_CFG["backend"]
]
# what a backtranslate job's output depends on: the configured backend's section, without scheduling
_BT_KEYED = {k: v for k, v in _BT_CFG.items() if k not in ("transformers", "apertium")} | {
    _BT_CFG["backend"]: {
        k: v for k, v in _BT_CFG[_BT_CFG["backend"]].items() if k not in _BT_SCHEDULING
    }
}
_BT_KEY = "{}-{}-{}".format(
    _BT_CFG["backend"],
    "_".join(p["name"] for p in _BT_CFG["pivots"]),
    short_hash(
        {
            "backend": _BT_CFG["backend"],
            "pivots": _BT_CFG["pivots"],
            "max_chars": _BT_CFG["max_chars"],
            "opts": {k: v for k, v in _BT_CFG[_BT_CFG["backend"]].items() if k not in _BT_UNKEYED},
        }
    ),
)
_PARA_KEY = f"{_BT_KEY}-mer{short_hash(_PARA_CFG)}"


def bt_candidates_shard(shard):
    """Every back-translation candidate of a corpus shard, before MER selection (contract path)."""
    return f"results/augment/bt_candidates/{corpus_tag()}/{_BT_KEY}/shard-{shard}.parquet"


@shard_helper
def paraphrase_shard(shard):
    """Back-translation shard with the selected paraphrase (contract path)."""
    return f"results/augment/backtranslation/{corpus_tag()}/{_PARA_KEY}/shard-{shard}.parquet"


# --- mined negatives (rules/mine.smk): the corpus embeddings are an artifact of their own, keyed
# by the corpus and the encoder settings, so two mining settings share them
_MINE_CFG = config["mine"]
_MINE_EMBED_KEYED = _mine_embed_keyed(_MINE_CFG)
_MINE_EMBED_KEY = f"emb-{short_hash(_MINE_EMBED_KEYED)}"
MINE_EMBED_DIR = f"results/embeddings/{corpus_tag()}/{_MINE_EMBED_KEY}"
_MINE_KEYED = _mine_shard_keyed(_MINE_CFG, config["seed"])
_MINE_KEY = f"mine-{short_hash(_MINE_KEYED | {'embeddings': _MINE_EMBED_KEY})}"


@shard_helper
def mined_shard(shard):
    """Mined-negative shard for a corpus shard (contract path)."""
    return f"results/augment/mine/{corpus_tag()}/{_MINE_KEY}/shard-{shard}.parquet"


def augmenter_shards(unit):
    """Every shard of an augmenter unit, through the path helper it names."""
    if unit.shard_helper not in SHARD_HELPERS:
        raise WorkflowError(
            f"augmenter {unit.name!r} ({unit.module}): shard_helper {unit.shard_helper!r} is not a "
            f"path helper; decorate it with @shard_helper in {unit.rule_file} (docs/extending.md)"
        )
    return [SHARD_HELPERS[unit.shard_helper](s) for s in SHARDS]


# --- evaluation and probe (rules/evaluate.smk, rules/probe.smk)
_EVAL_CFG = config["evaluate"]
_SPLITS_CFG = _EVAL_CFG["splits"]
_SPLITS_KEY = f"splits-{short_hash(_SPLITS_CFG)}"
SPLITS_DIR = f"results/eval/splits/{_SPLITS_KEY}"
EVAL_DIR = "results/eval/{experiment}/{method}/seed{seed}"
_PROBE_CFG = config["probe"]
# The probe set (sentences and their transformations) depends on the probe settings, the corpus,
# the paraphrase source, the negation settings and the MLM, never on the encoder scored: one
# artifact per key, scored by every model's probe job. The encoder batch size stays out.
_PROBE_SET_KEYED = {k: v for k, v in _PROBE_CFG.items() if k != "batch_size"} | {
    "paraphrases": {
        "shards": _PARA_KEY,
        "backtranslate": {"bt": _BT_KEYED, "paraphrase": _PARA_CFG},
        "none": None,
    }[_PROBE_CFG["paraphrases"]],
    "negation": _NEG_KEYED,
    "mlm": (
        (_BOOT_KEY if _USE_BOOTSTRAP else _MLM) if _PROBE_CFG["mlm"] == "san" else _PROBE_CFG["mlm"]
    ),
}
PROBE_SET_DIR = f"results/eval/probe-sets/{corpus_tag()}/probe-{short_hash(_PROBE_SET_KEYED)}"
# Encoder batch size changes no stored byte on the CPU (fp32; cosines stored rounded to 6 decimals,
# hardneg.evaluate.sts.COSINE_DECIMALS); on CUDA (device null = cuda when present) bf16 autocast
# rounds by batch shape, so there it stays a watched param.
_ENCODE_BATCH_KEYED = _EVAL_CFG["device"] != "cpu"


def eval_targets(experiment, method, seed):
    """sts.json of one experiment/method/seed (for other stages' target lists)."""
    return f"{EVAL_DIR}/sts.json".format(experiment=experiment, method=method, seed=seed)


def probe_target(experiment, method, seed):
    """probe.json of one experiment/method/seed."""
    return f"{EVAL_DIR}/probe.json".format(experiment=experiment, method=method, seed=seed)


# --- training (rules/train.smk)
_TRAIN_CFG = config["train"]
TRAIN_DIR = "results/train/{experiment}/{method}/seed{seed}"


def train_dir(experiment, method, seed):
    """Folder of one trained method x seed (model/, metrics.jsonl, summary.json, curve.png)."""
    return TRAIN_DIR.format(experiment=experiment, method=method, seed=seed)


def train_runs():
    """(method, seed) of every configured training run: train.methods x train.seeds."""
    return [(m, s) for m in _TRAIN_CFG["methods"] for s in _TRAIN_CFG["seeds"]]


# --- report (rules/report.smk)
REPORT_DIR = f"results/report/{config['experiment']}"
