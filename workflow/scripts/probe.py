"""Snakemake adapter: the transformation probe of one model (hardneg.evaluate.run.probe_model)."""

import logging

import torch

from hardneg.evaluate.run import probe_model

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
torch.set_num_threads(max(1, snakemake.threads))  # noqa: F821
p = snakemake.params  # noqa: F821
try:
    probe_model(
        p.model, list(snakemake.input.corpus), snakemake.output.summary, p.cfg,  # noqa: F821
        pairs_out=snakemake.output.pairs,  # noqa: F821
        paraphrase_shards=list(getattr(snakemake.input, "paraphrases", [])),  # noqa: F821 (probe.paraphrases=shards)
        backtranslation=p.backtranslation, paraphrase=p.paraphrase, negation=p.negation, mlm=p.mlm,
        max_length=p.max_length, device=p.device, batch_size=p.batch_size,
    )
except Exception:
    logging.exception("probe failed")
    raise
