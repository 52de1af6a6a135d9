"""Snakemake adapter: MLM tokenizer (+ corpus shards) -> SAN POS lexicon (hardneg.augment.san.lexicon)."""

import logging

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

import time  # noqa: E402

from hardneg.augment.san import lexicon as lx  # noqa: E402
from hardneg.models.load import load_tokenizer  # noqa: E402

log = logging.getLogger("lexicon")
cfg = dict(snakemake.params.cfg)
tok = load_tokenizer(snakemake.params.tokenizer, setting="san.mlm")
mode = cfg.get("mode", "isolation")
nlp = None if mode == "file" else lx.load_spacy(cfg.get("spacy_model", "en_core_web_sm"))
texts = None
if cfg.get("mode", "isolation") == "corpus":
    texts = lx.read_corpus_texts(snakemake.input.corpus)
    if cfg.get("corpus_max_sentences"):
        texts = texts[: cfg["corpus_max_sentences"]]
t0 = time.perf_counter()
frame, stats = lx.build_lexicon(
    tok, nlp, mode=mode, corpus_texts=texts, continuation=cfg.get("continuation", "x"),
    scores={**lx.PAPER_SCORES, **(cfg.get("scores") or {})}, scale=cfg.get("scale", lx.PAPER_SCALE),
    tags_file=snakemake.input.tags_file[0] if snakemake.input.tags_file else None,
)  # fmt: skip
stats["seconds"] = round(time.perf_counter() - t0, 1)
extra = {"stats": stats, "spacy_model": cfg.get("spacy_model"), "mode": cfg.get("mode", "isolation")}
if cfg.get("mode") == "corpus":
    # How the corpus lexicon differs from the isolation one, id by id.
    iso, _ = lx.build_lexicon(tok, nlp, mode="isolation", continuation=cfg.get("continuation", "x"))
    same = (iso["pos"] == frame["pos"]).sum()
    extra["isolation_agreement_pct"] = round(100.0 * same / frame.height, 2)
if snakemake.input.reference:
    extra["reference_comparison"] = lx.compare_with_reference(frame, snakemake.input.reference[0])
log.info("lexicon: %s", extra)
lx.write_lexicon(frame, snakemake.output.lexicon, tok, extra=extra)
