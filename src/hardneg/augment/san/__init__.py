"""SAN (Semantic-Aware Negatives): the POS lexicon (``lexicon``), the optional MLM bootstrap
(``bootstrap_mlm``), mask-predict iterations (``mask_predict``), its seeded draws (``rng``), the
output-path key (``key``, torch-free: imported at DAG build time) and the shard view (``inspect``).
Import the submodules directly; this package imports nothing so that ``key`` stays light."""
