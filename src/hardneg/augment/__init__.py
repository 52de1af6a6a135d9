"""Augmenters that make hard negatives and paraphrases, one subpackage each:

- ``san``: POS lexicon, optional MLM bootstrap, semantic-importance-aware mask-predict (SAN §3.1);
- ``negation``: negation insertion at the dependency root (SNCSE's rule by default);
- ``backtranslation``: round-trip translation and the MER-filtered paraphrase view (OssCSE §3).

``quality`` (shared output filters) and ``inspect`` (``hardneg inspect`` renderers) serve all three.
Never imports ``train`` or ``evaluate``."""
