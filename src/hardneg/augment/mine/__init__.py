"""Hard negatives mined from the corpus: encode every sentence once (a cached embeddings
artifact), search the nearest neighbours exactly, keep those a rank band, a score ceiling and a
margin to the positive admit (sentence_transformers.util.mine_hard_negatives's settings)."""
