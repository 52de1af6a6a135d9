"""Prompt templates for the [MASK] representation (PromptBERT; SNCSE uses the first two)."""

from __future__ import annotations

from collections.abc import Iterable

MASK_PLACEHOLDER = "[MASK]"

# SNCSE's two templates (notes/reference-implementations.md); "{sentence}" is the input sentence,
# "[MASK]" is replaced by the tokenizer's own mask token at encoding time.
PROMPT_TEMPLATES: dict[str, str] = {
    "sncse1": 'This sentence : "{sentence}" means [MASK] .',
    "sncse2": 'This sentence of "{sentence}" means [MASK] .',
}


def get_template(template_name: str) -> str:
    """The template string for a name, or the name itself when it is a literal template."""
    if template_name in PROMPT_TEMPLATES:
        return PROMPT_TEMPLATES[template_name]
    if "{sentence}" in template_name and MASK_PLACEHOLDER in template_name:
        return template_name
    raise ValueError(
        f"unknown prompt template {template_name!r} (known: {', '.join(PROMPT_TEMPLATES)}, "
        f"or a literal containing '{{sentence}}' and '{MASK_PLACEHOLDER}')"
    )


def split_template(template_name: str) -> tuple[str, str]:
    """(prefix, suffix) around ``{sentence}``."""
    template = get_template(template_name)
    prefix, _, suffix = template.partition("{sentence}")
    return prefix, suffix


def apply_template(sentences: Iterable[str], template_name: str) -> list[str]:
    """Wrap each sentence in the named template (text level; the mask token stays '[MASK]')."""
    prefix, suffix = split_template(template_name)
    return [prefix + s + suffix for s in sentences]
