"""``hardneg push``: upload a trained model folder to the Hugging Face hub."""

from __future__ import annotations

import argparse
import os


def _push(args: argparse.Namespace) -> int:
    from hardneg.train.push import push_model

    info = push_model(args.folder, args.repo_id, card=args.card, private=args.private,
                      token=args.token or os.environ.get("HF_TOKEN"), revision=args.revision,
                      commit_message=args.message)
    print(f"pushed {args.folder} to {args.repo_id}: {getattr(info, 'commit_url', info)}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "push", help="upload a trained model folder to the Hugging Face hub (needs huggingface_hub and a token)",
        description="Upload results/train/<exp>/<method>/seed<seed>/model as one commit. --card replaces its "
                    "README.md, e.g. with the workflow's results/eval/<exp>/<method>/seed<seed>/model_card.md "
                    "(which carries the STS test figures).",
    )
    p.add_argument("folder", help="an exported sentence-transformers folder (a training run's model/)")
    p.add_argument("repo_id", help="hub model repository, owner/name (created if missing)")
    p.add_argument("--card", default=None, help="model card to upload as README.md (default: the folder's own)")
    p.add_argument("--private", action="store_true", help="create the repository private")
    p.add_argument("--token", default=None, help="hub token (default: HF_TOKEN or the `hf auth login` token)")
    p.add_argument("--revision", default=None, help="branch to commit to (default: main)")
    p.add_argument("--message", default="Upload a hardneg sentence encoder", help="commit message")
    p.set_defaults(func=_push)
