"""Downloads: mirror resolution, HTTP over loopback, resume, checksums, clear failures."""

from __future__ import annotations

import hashlib
import json
import random
import socket

import pytest
from httpmirror import serve

from hardneg.data.download import DownloadError, download, resolve_url

UPSTREAM = "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/"
WIKI = "wiki1m_for_simcse.txt"


def test_resolve_url_variants(tmp_path):
    url = UPSTREAM + WIKI
    assert resolve_url(url, None) == url
    assert resolve_url(url, "http://127.0.0.1:9/") == (
        "http://127.0.0.1:9/datasets/princeton-nlp/datasets-for-simcse/resolve/main/" + WIKI
    )
    assert resolve_url(url, "file:///srv/m").startswith("file:///srv/m/datasets/")
    assert resolve_url(url, str(tmp_path)) == (
        tmp_path / "datasets/princeton-nlp/datasets-for-simcse/resolve/main" / WIKI
    ).as_uri()


def test_download_from_folder_mirror(tmp_path, mirror_dir):
    src = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main" / WIKI
    rec = download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=str(mirror_dir),
                   manifest=tmp_path / "m.json", progress=False)
    assert (tmp_path / WIKI).read_bytes() == src.read_bytes()
    assert rec["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert json.loads((tmp_path / "m.json").read_text())["bytes"] == src.stat().st_size


def test_download_over_http_with_checksum(tmp_path, mirror_dir):
    src = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main" / WIKI
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    with serve(mirror_dir) as (base, _):
        rec = download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=base, sha256=digest,
                       progress=False)
    assert rec["sha256_verified"] and rec["source"].startswith("http://127.0.0.1:")
    assert (tmp_path / WIKI).read_bytes() == src.read_bytes()


def test_truncated_transfer_resumes_with_range(tmp_path, mirror_dir):
    src = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main" / WIKI
    path = "/datasets/princeton-nlp/datasets-for-simcse/resolve/main/" + WIKI
    with serve(mirror_dir) as (base, handler):
        handler.truncate_first[path] = 100_000
        download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=base, backoff_s=0, progress=False)
        ranges = [r for p, r in handler.hits if p == path]
    assert ranges == [None, "bytes=100000-"]  # second request resumed where the first stopped
    assert (tmp_path / WIKI).read_bytes() == src.read_bytes()
    assert not (tmp_path / (WIKI + ".part")).exists()


def test_checksum_mismatch_fails_and_leaves_nothing(tmp_path, mirror_dir):
    with serve(mirror_dir) as (base, _), pytest.raises(DownloadError, match="sha256 mismatch") as err:
        download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=base, sha256="0" * 64,
                 retries=1, backoff_s=0, progress=False)
    assert UPSTREAM + WIKI in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_download_detected_by_checksum(tmp_path, mirror_dir):
    src = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main" / WIKI
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    path = "/datasets/princeton-nlp/datasets-for-simcse/resolve/main/" + WIKI
    with serve(mirror_dir) as (base, handler):
        handler.corrupt.add(path)
        with pytest.raises(DownloadError, match="sha256 mismatch"):
            download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=base, sha256=digest,
                     retries=0, progress=False)
    assert not (tmp_path / WIKI).exists()


def test_missing_file_is_not_retried(tmp_path, mirror_dir):
    with serve(mirror_dir) as (base, handler):
        with pytest.raises(DownloadError, match="404"):
            download(UPSTREAM + "nope.txt", tmp_path / "nope.txt", mirror=base, retries=3,
                     backoff_s=0, progress=False)
        assert len(handler.hits) == 1


def test_unreachable_mirror_names_url(tmp_path):
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError) as err:
        download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=f"http://127.0.0.1:{port}",
                 retries=1, backoff_s=0, timeout_s=2, progress=False)
    assert f"127.0.0.1:{port}" in str(err.value) and UPSTREAM + WIKI in str(err.value)
    assert not (tmp_path / WIKI).exists()


def test_missing_folder_mirror(tmp_path):
    with pytest.raises(DownloadError, match="no such file in mirror"):
        download(UPSTREAM + WIKI, tmp_path / WIKI, mirror=str(tmp_path / "empty"), progress=False)


@pytest.mark.parametrize("overlay", ["tiny.yaml", "quick.yaml"])
def test_offline_overlays_pin_the_mirror_files(overlay, repo_root, mirror_dir):
    """The mirror's senteval.tar is repacked and its wiki file an excerpt: their own sums."""
    from hardneg.config import load_config

    cfg = load_config([repo_root / "config.yaml", repo_root / "experiments" / overlay])
    folder = mirror_dir / "datasets/princeton-nlp/datasets-for-simcse/resolve/main"
    for name in (cfg["data"]["corpus_file"], cfg["data"]["senteval_file"]):
        assert cfg["data"]["sha256"][name] == hashlib.sha256((folder / name).read_bytes()).hexdigest()


# --- resume safety: a small file served from a temp folder ----------------------------------


def _served(tmp_path, size=50_000, seed=1):
    srv = tmp_path / "srv"
    srv.mkdir(exist_ok=True)
    data = random.Random(seed).randbytes(size)
    (srv / "f.bin").write_bytes(data)
    dest = tmp_path / "out" / "f.bin"
    dest.parent.mkdir(exist_ok=True)
    return srv, data, dest


def _part(dest):
    return dest.with_name(dest.name + ".part")


def test_test_server_answers_like_a_real_server(tmp_path):
    import urllib.error
    import urllib.request

    srv, data, _ = _served(tmp_path, size=1000)
    with serve(srv) as (base, _):
        with urllib.request.urlopen(base + "/f.bin") as r:
            etag = r.headers["ETag"]
            assert r.status == 200 and r.headers["Last-Modified"]
        req = urllib.request.Request(base + "/f.bin", headers={"Range": "bytes=600-"})
        with urllib.request.urlopen(req) as r:
            assert r.status == 206 and r.headers["Content-Range"] == "bytes 600-999/1000"
        req = urllib.request.Request(base + "/f.bin", headers={"Range": "bytes=1000-"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req)
        assert err.value.code == 416 and err.value.headers["Content-Range"] == "bytes */1000"
        req = urllib.request.Request(base + "/f.bin", headers={"Range": "bytes=600-", "If-Range": '"old"'})
        with urllib.request.urlopen(req) as r:
            assert r.status == 200 and r.read() == data
        req = urllib.request.Request(base + "/f.bin", headers={"Range": "bytes=600-", "If-Range": etag})
        with urllib.request.urlopen(req) as r:
            assert r.status == 206


def test_stale_part_without_sidecar_is_not_resumed(tmp_path):
    """Garbage (another file, another mirror) in a .part never becomes part of the download."""
    srv, data, dest = _served(tmp_path)
    _part(dest).write_bytes(b"garbage from another mirror" * 100)
    with serve(srv) as (base, handler):
        rec = download(base + "/f.bin", dest, backoff_s=0, progress=False)
        assert [r for _, r in handler.hits] == [None]
    assert dest.read_bytes() == data and rec["sha256"] == hashlib.sha256(data).hexdigest()
    assert not _part(dest).exists() and not dest.with_name("f.bin.part.json").exists()


def test_part_of_an_older_version_restarts_via_if_range(tmp_path):
    srv, _, dest = _served(tmp_path, seed=1)
    with serve(srv) as (base, handler):
        handler.truncate_first["/f.bin"] = 20_000
        with pytest.raises(DownloadError):
            download(base + "/f.bin", dest, retries=0, progress=False)
        assert _part(dest).stat().st_size == 20_000
        new = hashlib.sha256(b"v2").digest() * 2000  # the file changes upstream, same name
        (srv / "f.bin").write_bytes(new)
        download(base + "/f.bin", dest, backoff_s=0, progress=False)
        assert handler.if_ranges[-1] is not None  # resumed conditionally...
    assert dest.read_bytes() == new  # ...and the server's 200 started it over


def test_complete_part_finishes_on_416(tmp_path):
    """All bytes already in the .part: the server answers 416 bytes */N, we verify and finish."""
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.truncate_first["/f.bin"] = 10_000
        with pytest.raises(DownloadError):
            download(base + "/f.bin", dest, retries=0, progress=False)
        _part(dest).write_bytes(data)  # the rest arrived before the kill
        rec = download(base + "/f.bin", dest, retries=2, backoff_s=0, progress=False,
                       sha256=hashlib.sha256(data).hexdigest())
        assert handler.hits[-1] == ("/f.bin", f"bytes={len(data)}-")
    assert rec["sha256_verified"] and dest.read_bytes() == data


def test_overlong_part_starts_over_on_416(tmp_path):
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.truncate_first["/f.bin"] = 10_000
        with pytest.raises(DownloadError):
            download(base + "/f.bin", dest, retries=0, progress=False)
        _part(dest).write_bytes(data + b"tail")  # longer than the file: not this file
        download(base + "/f.bin", dest, retries=1, backoff_s=0, progress=False)
    assert dest.read_bytes() == data


def test_206_with_wrong_content_range_is_not_appended(tmp_path):
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.truncate_first["/f.bin"] = 10_000
        handler.bad_content_range.add("/f.bin")
        download(base + "/f.bin", dest, retries=2, backoff_s=0, progress=False)
    assert dest.read_bytes() == data


def test_checksum_mismatch_of_a_fresh_download_is_not_retried(tmp_path):
    srv, _, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        with pytest.raises(DownloadError, match="sha256 mismatch"):
            download(base + "/f.bin", dest, sha256="0" * 64, retries=5, backoff_s=0,
                     progress=False)
        assert len(handler.hits) == 1


def test_folder_mirror_part_of_another_file_is_not_resumed(tmp_path):
    srv, data, dest = _served(tmp_path)
    _part(dest).write_bytes(b"x" * 1000)
    rec = download("https://example.org/f.bin", dest, mirror=str(srv), progress=False)
    assert dest.read_bytes() == data and rec["bytes"] == len(data)


def test_part_without_validator_is_not_spliced_onto_a_changed_file(tmp_path):
    """No ETag / Last-Modified: a same-size new version must not be appended to the old bytes."""
    srv, _, dest = _served(tmp_path, seed=1)
    with serve(srv) as (base, handler):
        handler.no_validator.add("/f.bin")
        handler.truncate_first["/f.bin"] = 20_000
        with pytest.raises(DownloadError):
            download(base + "/f.bin", dest, retries=0, progress=False)
        assert _part(dest).stat().st_size == 20_000
        new = random.Random(2).randbytes(50_000)  # a new version of the same size
        (srv / "f.bin").write_bytes(new)
        download(base + "/f.bin", dest, backoff_s=0, progress=False)
        assert handler.hits[-1] == ("/f.bin", None)  # started over: no Range without a validator
    assert dest.read_bytes() == new


def test_part_without_validator_resumes_when_the_sha256_is_known(tmp_path):
    """The expected checksum proves identity at the end, so the bytes already here are kept."""
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.no_validator.add("/f.bin")
        handler.truncate_first["/f.bin"] = 20_000
        rec = download(base + "/f.bin", dest, sha256=hashlib.sha256(data).hexdigest(),
                       backoff_s=0, progress=False)
        assert [r for _, r in handler.hits] == [None, "bytes=20000-"]
    assert rec["sha256_verified"] and dest.read_bytes() == data


def test_cut_reply_without_content_length_is_detected_and_resumed(tmp_path):
    """A body ended by closing the connection: the length is asked with a Range request."""
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.no_length.add("/f.bin")
        handler.truncate_first["/f.bin"] = 20_000
        with pytest.raises(DownloadError) as err:
            download(base + "/f.bin", dest, retries=0, progress=False)
        assert base + "/f.bin" in str(err.value) and "got 20000 of 50000 bytes" in str(err.value)
        assert not dest.exists()
        download(base + "/f.bin", dest, backoff_s=0, progress=False)
    assert dest.read_bytes() == data


def test_reply_without_length_or_range_support_needs_a_checksum(tmp_path):
    srv, data, dest = _served(tmp_path)
    with serve(srv) as (base, handler):
        handler.no_length.add("/f.bin")
        handler.ignore_range.add("/f.bin")
        with pytest.raises(DownloadError, match="without Content-Length .* sha256"):
            download(base + "/f.bin", dest, retries=3, backoff_s=0, progress=False)
        assert not dest.exists() and not _part(dest).exists()
        rec = download(base + "/f.bin", dest, sha256=hashlib.sha256(data).hexdigest(),
                       progress=False)
    assert rec["sha256_verified"] and dest.read_bytes() == data


def test_second_download_into_one_destination_waits_and_reuses_the_file(tmp_path):
    """Another download holds the destination's lock: this one waits, then takes its file."""
    import fcntl
    import threading

    srv, data, dest = _served(tmp_path)
    lock = open(dest.with_name(dest.name + ".lock"), "a")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)
    result = {}
    with serve(srv) as (base, handler):
        waiter = threading.Thread(target=lambda: result.update(
            rec=download(base + "/f.bin", dest, progress=False)))
        waiter.start()
        waiter.join(timeout=1.0)
        assert waiter.is_alive() and handler.hits == []  # waiting, not writing the .part
        dest.write_bytes(data)  # the other download finishes...
        lock.close()  # ...and releases its lock
        waiter.join(timeout=30)
        assert handler.hits == []  # the finished file was reused, not fetched again
    assert result["rec"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert dest.read_bytes() == data and not dest.with_name("f.bin.lock").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--retries", "-1"], "argument --retries: -1 must be >= 0"),
    (["--retries", "1.5"], "argument --retries: '1.5' is not an integer"),
    (["--sha256", "abc"], "argument --sha256: 'abc' is not a SHA-256 digest (64 hex digits)"),
    (["--sha256", "g" * 64], "is not a SHA-256 digest"),
    (["--timeout-s", "0"], "argument --timeout-s: 0 must be > 0"),
    (["--backoff-s", "nan"], "argument --backoff-s: nan must be >= 0"),
])
def test_download_command_refuses_bad_arguments(args, message, tmp_path, capsys):
    from hardneg.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["download", "f.bin", "--out", str(tmp_path / "f.bin"), *args])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
