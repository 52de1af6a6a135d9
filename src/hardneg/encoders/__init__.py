"""Encoders shared by training and evaluation: poolers, prompt templates, batched encoding."""

from hardneg.encoders.encoder import Encoder, load_encoder
from hardneg.encoders.pooling import POOLERS, masked_mean, pool
from hardneg.encoders.templates import PROMPT_TEMPLATES, apply_template

__all__ = ["POOLERS", "PROMPT_TEMPLATES", "Encoder", "apply_template", "load_encoder", "masked_mean", "pool"]
