"""Snakemake adapter: rule select_paraphrase -> hardneg.augment.backtranslation.paraphrase (MER window + policy)."""

from hardneg.augment.backtranslation.paraphrase import ParaphraseConfig, select_frame, summarize
from hardneg.runlog import run_rule
from hardneg.shards import read_shard, write_json_atomic, write_shard

sm = snakemake  # noqa: F821 (snakemake injects this object)


def main() -> None:
    import logging

    cands = read_shard(sm.input[0])
    out = select_frame(cands, ParaphraseConfig.from_dict(sm.params.cfg))
    if out.height != cands.height:
        raise RuntimeError(f"{sm.input[0]}: {cands.height} rows in, {out.height} out")
    summary = summarize(out)
    logging.getLogger("hardneg.paraphrase").info("%s: %s", sm.input[0], summary)
    write_shard(out, sm.output.shard)
    write_json_atomic(summary, sm.output.summary)


run_rule(main, sm.log[0])
