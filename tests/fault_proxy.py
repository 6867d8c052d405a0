"""A real HTTP proxy on 127.0.0.1 in front of the local GitHub fake that breaks answers on purpose.

The client talks to the proxy as if it were GitHub (`api_url`); the proxy forwards each request to the
fake over HTTP and rewrites the fake's addresses in bodies, `Link` and `Location` to its own, so the
next page and the log redirect come back through it too (the log host gets a proxy of its own).

Faults, each for the next `times` matching requests:
  stall      hold the answer `seconds` (longer than the client's timeout: a read timeout)
  reset      close the connection with a TCP RST, no answer
  truncate   full Content-Length, half the body, then close (an incomplete read)
  cut_json   half the body with a matching Content-Length: valid HTTP, invalid JSON
  gzip_corrupt / gzip_truncate   the body gzip-encoded (Content-Encoding: gzip), then corrupted or cut
  status     answer `status` with `headers` and `body` instead of forwarding
"""

from __future__ import annotations

import gzip
import http.client
import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


@dataclass
class ProxyFault:
    kind: str
    method: str
    path: re.Pattern[str]
    times: int = 1
    seconds: float = 0.0
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


class FaultProxy:
    """Proxies for the fake's API and log host. `api_url` is what the client is given."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self.faults: list[ProxyFault] = []
        self.seen: list[tuple[str, str, str]] = []  # (host, method, path?query)
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self.api_url = self.logs_url = ""

    def add(self, kind: str, method: str, path_regex: str, times: int = 1, **options: Any) -> None:
        with self._lock:
            self.faults.append(ProxyFault(kind, method, re.compile(path_regex), times, **options))

    def _take(self, method: str, path: str) -> ProxyFault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and fault.path.search(path):
                    fault.times -= 1
                    return fault
        return None

    def __enter__(self) -> FaultProxy:
        api = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self.fake.base_url))
        logs = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(self.fake.log_host_url))
        for server in (api, logs):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
            self._servers.append(server)
        self.api_url = f"http://127.0.0.1:{api.server_address[1]}"
        self.logs_url = f"http://127.0.0.1:{logs.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def _rewrite(self, text: str) -> str:
        return text.replace(self.fake.base_url, self.api_url).replace(self.fake.log_host_url, self.logs_url)

    def _handler(self, upstream: str) -> type[BaseHTTPRequestHandler]:
        proxy = self
        target = urlsplit(upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _reset(self) -> None:
                self.close_connection = True
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass

            def _send(self, status: int, headers: list[tuple[str, str]], body: bytes, length: int | None = None) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body_in = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                with proxy._lock:
                    proxy.seen.append((upstream, method, self.path))
                fault = proxy._take(method, path)
                kind = fault.kind if fault else None
                if kind == "reset":
                    return self._reset()
                if kind == "status":
                    body = json.dumps(fault.body or {"message": "Server Error"}).encode()
                    return self._send(fault.status, [("Content-Type", "application/json; charset=utf-8"),
                                                      *fault.headers.items()], body)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                try:
                    conn.request(method, self.path, body=body_in or None, headers=headers)
                    answer = conn.getresponse()
                    status, raw = answer.status, answer.read()
                    out_headers = [(k, proxy._rewrite(v)) for k, v in answer.getheaders()
                                   if k.lower() not in HOP_BY_HOP]
                finally:
                    conn.close()
                if status != 304:
                    raw = proxy._rewrite(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
                if kind == "stall":
                    time.sleep(fault.seconds)
                if kind == "truncate":
                    self.close_connection = True
                    return self._send(status, out_headers, raw[: len(raw) // 2], length=len(raw))
                if kind == "cut_json":
                    return self._send(status, out_headers, raw[: len(raw) // 2])
                if kind in ("gzip_corrupt", "gzip_truncate"):
                    packed = gzip.compress(raw)
                    if kind == "gzip_corrupt":
                        middle = len(packed) // 2
                        packed = packed[:middle] + bytes(b ^ 0x5A for b in packed[middle:middle + 64]) + \
                            packed[middle + 64:]
                    else:
                        packed = packed[: len(packed) // 2]
                    return self._send(status, [*out_headers, ("Content-Encoding", "gzip")], packed)
                try:
                    self._send(status, out_headers, raw)
                except OSError:
                    self.close_connection = True

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

            def do_PATCH(self) -> None:
                self._forward("PATCH")

        return Handler
