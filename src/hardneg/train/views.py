"""What each training view is encoded from: its text and its prompt template, decided here for
every forward path (the ordinary views pass, HiCL's segments, the teachers, the SynCSE pool index).

Views: ``anchor`` and ``positive`` (the same sentence in SNCSE's two templates), ``syncse`` (pool
negatives), and one view per augmenter unit, named by its column (``hardneg.augment.units``:
``san``, ``negation``, ``paraphrase`` and any registered augmenter's). What a unit's view gets
(its default template, SNCSE's period, whether the ordinary views pass encodes it) is declared
on the unit; the functions below read the registry, so a unit registered later is included.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hardneg.augment import units as augmenters

if TYPE_CHECKING:
    from hardneg.train.settings import TrainSettings

VIEW_TEMPLATE_CHOICES = augmenters.TEMPLATE_CHOICES
# SynCSE pool negatives: a method's view, not an augmenter's; templated like the other negatives
METHOD_VIEW_TEMPLATES = {"syncse": "positive"}
# train_SNCSE.py (Sense-GVT/SNCSE and SAN's SNCSE+SAN / RLRD+SAN copies): PUNCTUATION =
# list(string.punctuation); " ." is appended to the anchor/positive sentence and to the views whose
# unit says append_period (the negation), never to SAN's negative (SAN's scripts comment that out)
PUNCTUATION = frozenset(string.punctuation)


def extra_views() -> tuple[str, ...]:
    """Views besides anchor/positive that get a template: every augmenter's column, then syncse."""
    return (*augmenters.columns(), *METHOD_VIEW_TEMPLATES)


def default_view_templates() -> dict[str, str]:
    """view -> anchor|positive: each unit's declared template, and the method views'."""
    return {**{u.column: u.view_template for u in augmenters.units()}, **METHOD_VIEW_TEMPLATES}


def period_views() -> tuple[str, ...]:
    """Views SNCSE's " ." is appended to (with ``append_period``)."""
    return ("anchor", "positive", *(u.column for u in augmenters.units() if u.append_period))


def views_pass_order() -> tuple[str, ...]:
    """The order the views pass encodes views in (and HiCL's segment pass): anchor, positive, the
    units' views that declare ``views_pass`` (SAN has a pass of its own), then syncse."""
    return ("anchor", "positive", *(u.column for u in augmenters.units() if u.views_pass), "syncse")


def view_template(s: TrainSettings, view: str) -> str | None:
    """The template ``view`` is encoded with (None without a prompt): anchor and positive take
    ``templates[0]`` / ``templates[1]``, every other view the one ``view_templates`` names."""
    if not s.templates:
        return None
    if view == "anchor":
        return s.templates[0]
    if view == "positive":
        return s.templates[1]
    which = {**default_view_templates(), **(s.view_templates or {})}[view]
    return s.templates[0] if which == "anchor" else s.templates[1]


def with_period(sentence: str) -> str:
    """``sentence + " ."`` when its last non-space character is not ASCII punctuation
    (train_SNCSE.py: ``if sentence.strip()[-1] not in PUNCTUATION: sentence = sentence + " ."``);
    an empty sentence, on which the reference fails, is left as it is."""
    stripped = sentence.strip()
    return sentence + " ." if stripped and stripped[-1] not in PUNCTUATION else sentence


def view_texts(s: TrainSettings, view: str, sentences: Sequence[str],
               anchors: Sequence[str] | None = None) -> list[str]:
    """The text ``view`` is tokenized from: with ``append_period``, SNCSE's " ." on the anchor,
    positive and negation; with ``negation_period_fallback`` too, the negation of every row whose
    anchor got the period is SNCSE's fallback ``"Not " + anchor + " ."`` (train_SNCSE.py looks the
    negation up with the period-appended sentence as key, which misses for exactly those rows).
    ``anchors``: the rows' corpus sentences (needed for that fallback)."""
    if not s.append_period or view not in period_views():
        return list(sentences)
    if view == "negation" and s.negation_period_fallback:
        if anchors is None or len(anchors) != len(sentences):
            raise ValueError("train setting 'negation_period_fallback': the negation view needs its anchors")
        out = []
        for neg, a in zip(sentences, anchors):
            keyed = with_period(a)
            out.append(with_period("Not " + keyed) if keyed != a else with_period(neg))
        return out
    return [with_period(x) for x in sentences]


def views_pass(s: TrainSettings, texts: Sequence[str],
               extra: dict[str, list[str]]) -> list[tuple[str, list[str], str | None]]:
    """(view, text, template) of every view the views pass encodes, in :func:`views_pass_order`
    (anchor and positive from ``texts``, the others from the ``extra`` columns present)."""
    cols = {"anchor": texts, "positive": texts, **extra}
    return [(v, view_texts(s, v, cols[v], texts), view_template(s, v)) for v in views_pass_order() if v in cols]
