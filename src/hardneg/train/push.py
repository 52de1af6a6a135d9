"""Upload an exported model folder to the Hugging Face hub (``hardneg push``; ``hub`` extra).

One commit with every file of the folder (README.md replaced by ``card`` when given: the
workflow's ``results/eval/.../model_card.md`` carries the STS test figures). The folder must be a
sentence-transformers folder and its card must parse as a hub model card (metadata included), so
a broken upload is refused here, not discovered on the hub.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# files an export folder may hold that are not part of the model
_SKIP_PREFIXES = (".",)


def model_files(folder: Path) -> list[Path]:
    """The folder's files, sorted, relative to it (hidden files and temp files left out)."""
    return sorted(p.relative_to(folder) for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(_SKIP_PREFIXES) for part in p.relative_to(folder).parts))


def check_card(text: str, where: str) -> Any:
    """The parsed hub model card of ``text``; a card whose metadata the hub cannot read is an error."""
    import yaml
    from huggingface_hub import ModelCard

    try:
        card = ModelCard(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{where}: not a valid hub model card ({str(exc).splitlines()[0]})") from None
    if card.data.to_dict().get("library_name") != "sentence-transformers":
        raise ValueError(f"{where}: the card's metadata has no 'library_name: sentence-transformers'")
    return card


def push_model(folder: str | Path, repo_id: str, *, card: str | Path | None = None, private: bool = False,
               token: str | None = None, revision: str | None = None,
               commit_message: str = "Upload a hardneg sentence encoder", api: Any = None) -> Any:
    """Create ``repo_id`` (if needed) and commit the folder's files; returns the hub's CommitInfo.
    ``api``: an ``HfApi`` (default: a new one with ``token``)."""
    try:
        from huggingface_hub import CommitOperationAdd, HfApi
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:
        raise RuntimeError("hardneg push needs huggingface_hub: pip install 'hardneg[hub]'") from None
    from hardneg.encoders.st_folder import is_st_folder, read_folder

    folder = Path(folder)
    if not is_st_folder(folder):
        raise FileNotFoundError(f"{folder}: not a sentence-transformers folder (no modules.json); "
                                f"push the model/ folder of a training run")
    read_folder(folder)  # a folder whose modules.json cannot be read is not uploaded
    try:
        validate_repo_id(repo_id)
        if "/" not in repo_id:
            raise HFValidationError("give owner/name")
    except HFValidationError as exc:
        raise ValueError(f"repo id {repo_id!r}: {exc}") from None
    card_path = Path(card) if card is not None else folder / "README.md"
    if not card_path.is_file():
        raise FileNotFoundError(f"model card {card_path} does not exist")
    card_text = card_path.read_text(encoding="utf-8")
    check_card(card_text, str(card_path))
    ops = [CommitOperationAdd(path_in_repo=rel.as_posix(), path_or_fileobj=str(folder / rel))
           for rel in model_files(folder) if rel.as_posix() != "README.md"]
    ops.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_text.encode("utf-8")))
    api = api if api is not None else HfApi(token=token)
    api.create_repo(repo_id, private=private, repo_type="model", exist_ok=True)
    return api.create_commit(repo_id, ops, commit_message=commit_message, repo_type="model", revision=revision)
