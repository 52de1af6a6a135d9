"""Augmenters that make hard negatives and paraphrases: SAN mask-predict, negation,
back-translation (+ MER filter). Never imports ``train`` or ``evaluate``."""
