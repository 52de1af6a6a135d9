"""Contrastive training: objectives, model + poolers, data joining, the trainer, export."""
