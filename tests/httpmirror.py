"""A loopback HTTP server for tests: serves a folder, honours Range, can misbehave on purpose.

It answers as real servers (nginx, S3, the Hugging Face CDN) do: ``ETag`` and
``Last-Modified`` on every file, ``206`` with ``Content-Range: bytes S-E/N`` for a satisfiable
``Range``, ``416`` with ``Content-Range: bytes */N`` when the range starts at or past the end,
and the whole file (``200``) when ``If-Range`` does not match the current validator (RFC 9110
§13.1.5, §14.4, §15.5.17). Per path it can also leave out the validators (``no_validator``),
leave out ``Content-Length`` so that closing the connection ends the body (``no_length``,
RFC 9112 §6.3), or ignore ``Range`` (``ignore_range``), as some servers do.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.server
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import ClassVar


class _Handler(http.server.SimpleHTTPRequestHandler):
    # class-level on purpose: serve() makes a subclass with fresh containers per server
    truncate_first: ClassVar[dict[str, int]] = {}  # path -> bytes to send before dropping, once
    corrupt: ClassVar[set[str]] = set()  # paths served with one flipped byte
    bad_content_range: ClassVar[set[str]] = set()  # paths whose 206 announces a wrong start offset
    no_validator: ClassVar[set[str]] = set()  # paths served without ETag / Last-Modified
    no_length: ClassVar[set[str]] = set()  # paths served without Content-Length (close ends them)
    ignore_range: ClassVar[set[str]] = set()  # paths always served whole (200)
    hits: ClassVar[list[tuple[str, str | None]]] = []
    if_ranges: ClassVar[list[str | None]] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        self.hits.append((self.path, self.headers.get("Range")))
        self.if_ranges.append(self.headers.get("If-Range"))
        if not path.is_file():
            self.send_error(404, "not found")
            return
        data = path.read_bytes()
        if self.path in self.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
        modified = email.utils.formatdate(int(path.stat().st_mtime), usegmt=True)
        rng = None if self.path in self.ignore_range else self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and if_range is not None and if_range not in (etag, modified):
            rng = None  # the representation changed: send it whole
        start = 0
        if rng and rng.startswith("bytes="):
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            shown = start + 1 if self.path in self.bad_content_range else start
            self.send_header("Content-Range", f"bytes {shown}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        if self.path not in self.no_validator:
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
        if self.path not in self.ignore_range:
            self.send_header("Accept-Ranges", "bytes")
        if self.path in self.no_length:
            self.close_connection = True  # HTTP/1.0: the end of the body is the closed connection
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.truncate_first.pop(self.path, None)
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[tuple[str, type[_Handler]]]:
    """Serve ``folder`` on 127.0.0.1 (ephemeral port); yield (base URL, handler class)."""
    handler = type("Handler", (_Handler,), {"truncate_first": {}, "corrupt": set(), "hits": [],
                                            "bad_content_range": set(), "if_ranges": [],
                                            "no_validator": set(), "no_length": set(),
                                            "ignore_range": set()})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
