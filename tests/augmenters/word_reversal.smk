# Rules of the word_reversal augmenter (tests/augmenters/word_reversal.py), included by the
# Snakefile when the config's `augmenters` names that module.
import importlib

_word_reversal = importlib.import_module(augmenter_by_name("word_reversal").module)


@shard_helper
def word_reversal_shard(shard):
    """word_reversal shard for a corpus shard (the unit's shard_helper)."""
    return f"results/augment/word_reversal/{corpus_tag()}/shard-{shard}.parquet"


rule word_reversal:
    input:
        corpus=corpus_shard("{shard}"),
    output:
        shard=word_reversal_shard("{shard}"),
    log:
        f"{LOGS}/word_reversal/{{shard}}.log",
    run:
        _word_reversal.reverse_shard(input.corpus, output.shard)
