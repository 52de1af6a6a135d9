"""Unpack ``senteval.tar`` into the SentEval layout, atomically and safely.

We do not rely on ``tarfile``'s ``filter="data"``: before Python 3.11.13 / 3.12.11 a symlink
chain can push a resolved path past PATH_MAX and escape it (CVE-2025-4517). The real archive
holds only regular files and folders, so every other member type is refused, every member path
is checked to stay inside the target, and files are written by us (``O_EXCL | O_NOFOLLOW``) from
the member's bytes: nothing the archive says about links, owners or modes is ever applied.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import tempfile
from pathlib import Path

from hardneg.data.senteval import required_files

CHUNK = 1 << 20


def _safe_name(archive: Path, member: tarfile.TarInfo) -> str:
    """The member's relative POSIX path, or a ValueError naming the member and why."""
    name = member.name
    if not (member.isreg() or member.isdir()):
        kind = {tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link", tarfile.FIFOTYPE: "fifo",
                tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device"}.get(
                    member.type, f"type {member.type!r}")
        raise ValueError(f"{archive}: member {name!r} is a {kind}; only files and folders allowed")
    if "\x00" in name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"{archive}: member {name!r} has an absolute path")
    norm = posixpath.normpath(name)
    if norm == ".." or norm.startswith("../") or "\\" in name:
        raise ValueError(f"{archive}: member {name!r} points outside the target folder")
    return norm


def _extract(archive: Path, tmp: Path) -> None:
    root = os.path.realpath(tmp)
    with tarfile.open(archive) as tar:
        for member in tar:  # headers read one by one: a truncated archive fails here
            rel = _safe_name(archive, member)
            if rel == ".":
                continue
            target = os.path.join(root, rel)
            parent = os.path.dirname(target)
            # Every folder on the way was created by us (no links are ever made), so realpath
            # must equal the lexical path; check anyway, it is cheap.
            os.makedirs(parent, mode=0o755, exist_ok=True)
            if os.path.realpath(parent) != parent or os.path.commonpath([root, target]) != root:
                raise ValueError(f"{archive}: member {member.name!r} resolves outside the target")
            if member.isdir():
                os.makedirs(target, mode=0o755, exist_ok=True)
                continue
            src = tar.extractfile(member)
            assert src is not None  # regular file
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                raise ValueError(f"{archive}: member {member.name!r} appears twice") from None
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
                if out.tell() != member.size:
                    raise ValueError(f"{archive}: member {member.name!r} is truncated")


def extract_senteval(archive: str | Path, out_dir: str | Path) -> Path:
    """Extract ``archive`` to ``out_dir`` (renamed into place only when complete and valid)."""
    archive, out_dir = Path(archive), Path(out_dir)
    if not archive.is_file():  # not "corrupt": say what is wrong, before a temp folder exists
        what = "is a folder, not a tar archive" if archive.is_dir() else "does not exist"
        raise FileNotFoundError(f"SentEval archive {archive} {what} (data.senteval_file; "
                                "`hardneg download senteval.tar` fetches it)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        try:
            _extract(archive, tmp)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ValueError(f"{archive}: corrupt or truncated tar archive: {exc}") from exc
        # A tar cut at a member boundary reads without error: check the files the readers use.
        missing = [r for r in required_files() if not (tmp / r).is_file()]
        if missing:
            raise ValueError(
                f"{archive}: not a complete SentEval archive (missing {', '.join(missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else "") + ")"
            )
        empty = [r for r in required_files() if (tmp / r).stat().st_size == 0]
        if empty:
            raise ValueError(f"{archive}: empty file(s) in the SentEval archive: {', '.join(empty)}")
        # mkdtemp makes the folder 0700; a shared cluster group must read it (umask applies).
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o755 & ~umask)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out_dir
