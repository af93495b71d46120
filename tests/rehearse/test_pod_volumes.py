"""What the emulated kubelet gives a server pod beyond a program's: volumes that follow their
objects as the kubelet's atomic writer updates them (a subPath keeps the file it was given), and
a readiness probe."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

from gpuplatform.rehearse.pods import PodLauncher, _http_get


def test_a_refreshed_key_is_a_new_file_so_a_subpath_keeps_the_old_one(tmp_path: Path) -> None:
    PodLauncher._keys(tmp_path, {"config.yaml": "first"}, None)
    mounted = (tmp_path / "config.yaml").open()  # what a subPath bind holds: the file as it was
    PodLauncher._keys(tmp_path, {"config.yaml": "second"}, None)
    assert (tmp_path / "config.yaml").read_text() == "second"
    assert mounted.read() == "first"
    mounted.close()
    assert not list(tmp_path.glob(".*.new"))


def test_the_readiness_probe_is_an_http_get_that_answers_200_to_399() -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/readyz" else 500)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert _http_get({"path": "/readyz", "port": port})
        assert not _http_get({"path": "/healthz", "port": port})
    finally:
        server.shutdown()
    assert not _http_get({"path": "/readyz", "port": port})
