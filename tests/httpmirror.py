"""A loopback HTTP server for tests: serves a folder, honours Range, can misbehave on purpose."""

from __future__ import annotations

import contextlib
import http.server
import threading
from functools import partial
from pathlib import Path
from typing import Iterator


class _Handler(http.server.SimpleHTTPRequestHandler):
    truncate_first: dict[str, int] = {}  # path -> bytes to send before dropping, once
    corrupt: set[str] = set()  # paths served with one flipped byte
    hits: list[tuple[str, str | None]] = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):  # noqa: N802
        path = Path(self.translate_path(self.path))
        self.hits.append((self.path, self.headers.get("Range")))
        if not path.is_file():
            self.send_error(404, "not found")
            return
        data = path.read_bytes()
        if self.path in self.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[len("bytes="):].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
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
    handler = type("Handler", (_Handler,), {"truncate_first": {}, "corrupt": set(), "hits": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
