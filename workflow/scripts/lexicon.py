"""Snakemake adapter: MLM tokenizer (+ corpus shards) -> SAN POS lexicon (hardneg.augment.san.run.run_lexicon)."""

from hardneg.augment.san.run import run_lexicon
from hardneg.runlog import run_rule

sm = snakemake  # noqa: F821 (snakemake injects this object)
inp = sm.input
run_rule(
    run_lexicon, sm.log[0], sm.output.lexicon, sm.params.tokenizer, dict(sm.params.cfg), corpus=list(inp.corpus),
    tags_file=inp.tags_file[0] if inp.tags_file else None, reference=inp.reference[0] if inp.reference else None,
)  # fmt: skip
