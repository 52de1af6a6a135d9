"""senteval.tar extraction: hostile members refused whatever the Python, truncation caught."""

from __future__ import annotations

import io
import stat
import tarfile
from pathlib import Path

import pytest
from test_senteval_readers import make_toy_senteval

from hardneg.data.archive import extract_senteval


def _toy_tar(tmp_path: Path, extra=(), drop: str | None = None) -> Path:
    """A small valid SentEval archive (+ ``extra`` TarInfo members, - the file ``drop``)."""
    src = make_toy_senteval(tmp_path / "src", n=2)
    out = tmp_path / "senteval.tar"
    with tarfile.open(out, "w") as tar:
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src).as_posix()
            if rel != drop:
                tar.add(path, arcname=rel, recursive=False)
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out


def _member(name: str, kind: bytes, linkname: str = "", data: bytes | None = None):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if data is not None else 0
    return info, data


def test_toy_archive_extracts_world_readable(tmp_path):
    out = extract_senteval(_toy_tar(tmp_path), tmp_path / "data" / "senteval")
    assert (out / "SICK" / "SICK_test_annotated.txt").is_file()
    # a shared cluster group must be able to read it (mkdtemp alone gives 0700)
    assert stat.S_IMODE(out.stat().st_mode) & 0o055 == 0o055


@pytest.mark.parametrize(
    "member",
    [
        _member("STS/link", tarfile.SYMTYPE, "STSBenchmark"),  # inside the target, still refused
        _member("STS/hard", tarfile.LNKTYPE, "STS/STSBenchmark/sts-test.csv"),
        _member("STS/fifo", tarfile.FIFOTYPE),
        _member("STS/dev", tarfile.CHRTYPE),
        _member("../outside.txt", tarfile.REGTYPE, data=b"x"),
        _member("/tmp/abs.txt", tarfile.REGTYPE, data=b"x"),
    ],
    ids=["symlink", "hardlink", "fifo", "chardev", "dotdot", "absolute"],
)
def test_hostile_members_refused(tmp_path, member):
    archive = _toy_tar(tmp_path, extra=[member])
    with pytest.raises(ValueError, match=f"{archive}: member"):
        extract_senteval(archive, tmp_path / "data" / "senteval")
    assert not (tmp_path / "data" / "senteval").exists()
    assert not (tmp_path / "outside.txt").exists()
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == []  # no temp folder left


def test_symlink_chain_escape_refused(tmp_path):
    """CVE-2025-4517 shape: a symlink chain, then a hard link / file written through it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    chain = [
        _member("a", tarfile.SYMTYPE, "."),
        _member("a/b", tarfile.SYMTYPE, ".."),
        _member("escape", tarfile.SYMTYPE, "a/b/.."),
        _member("escape/victim.txt", tarfile.REGTYPE, data=b"owned"),
    ]
    archive = _toy_tar(tmp_path, extra=chain)
    with pytest.raises(ValueError, match="member"):
        extract_senteval(archive, tmp_path / "data" / "senteval")
    assert victim.read_text() == "keep"


def test_archive_cut_at_member_boundary_is_refused(tmp_path):
    """SICK/ present but its test file missing: today accepted, now named."""
    archive = _toy_tar(tmp_path, drop="SICK/SICK_test_annotated.txt")
    with pytest.raises(ValueError, match="SICK/SICK_test_annotated.txt"):
        extract_senteval(archive, tmp_path / "data" / "senteval")
    assert not (tmp_path / "data" / "senteval").exists()


def test_archive_truncated_mid_file_is_refused(tmp_path):
    archive = _toy_tar(tmp_path)
    data = archive.read_bytes()
    with tarfile.open(archive) as tar:
        last = tar.getmembers()[-1]
    archive.write_bytes(data[: last.offset_data + 10])  # inside the last file's data
    with pytest.raises(ValueError, match="corrupt or truncated|missing"):
        extract_senteval(archive, tmp_path / "data" / "senteval")


def test_empty_required_file_is_refused(tmp_path):
    src_tar = _toy_tar(tmp_path, drop="STS/STS12-en-test/STS.gs.MSRpar.txt",
                       extra=[_member("STS/STS12-en-test/STS.gs.MSRpar.txt", tarfile.REGTYPE, data=b"")])
    with pytest.raises(ValueError, match="STS.gs.MSRpar.txt"):
        extract_senteval(src_tar, tmp_path / "data" / "senteval")


def test_mirror_archive_extracts(tmp_path, mirror_dir):
    tar = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main/senteval.tar"
    out = extract_senteval(tar, tmp_path / "senteval")
    assert (out / "STS/STSBenchmark/sts-test.csv").stat().st_size > 0


def test_missing_archive_is_named_missing_not_corrupt(tmp_path):
    missing = tmp_path / "downloads" / "senteval.tar"
    with pytest.raises(FileNotFoundError) as err:
        extract_senteval(missing, tmp_path / "data" / "senteval")
    assert str(err.value).startswith(f"SentEval archive {missing} does not exist")
    assert "corrupt" not in str(err.value) and not (tmp_path / "data").exists()
