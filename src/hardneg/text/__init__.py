"""Word tokenisation and Match Error Rate (MER)."""

from hardneg.text.mer import mer, mer_batch, words

__all__ = ["mer", "mer_batch", "words"]
