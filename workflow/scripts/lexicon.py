"""Snakemake adapter: MLM tokenizer (+ corpus shards) -> SAN POS lexicon (hardneg.augment.san.run.run_lexicon)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from hardneg.augment.san.run import run_lexicon  # noqa: E402

inp = snakemake.input
run_lexicon(
    snakemake.output.lexicon, snakemake.params.tokenizer, dict(snakemake.params.cfg), corpus=list(inp.corpus),
    tags_file=inp.tags_file[0] if inp.tags_file else None, reference=inp.reference[0] if inp.reference else None,
)  # fmt: skip
