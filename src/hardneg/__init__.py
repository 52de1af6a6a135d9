"""hardneg: hard negatives for sentence-embedding training, and what they buy."""

__version__ = "0.1.0"
