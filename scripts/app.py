#!/usr/bin/env python3
"""A small application for trying electd locally (docs/proxy.md, docs/operations.md).

    python3 scripts/app.py NAME HOST:PORT

It answers every request with its name and what electd's forwarding proxy told
it: the leader's id and the fencing token (the headers Electd-Leader-Id and
Electd-Fencing-Token). GET /healthz answers 200, or 503 after POST /healthz/down
(until POST /healthz/up): a health check for app.health_url. Standard library
only; it logs nothing.
"""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    healthy = True

    def log_message(self, format, *args):
        pass

    def answer(self, code, text):
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/healthz":
            healthy = type(self).healthy
            return self.answer(200 if healthy else 503, "ok" if healthy else "down")
        leader = self.headers.get("Electd-Leader-Id")
        if leader is None:
            return self.answer(200, f"{NAME}: {self.command} {self.path} (not through electd's proxy)")
        token = self.headers.get("Electd-Fencing-Token")
        self.answer(200, f"{NAME}: {self.command} {self.path} (leader {leader}, fencing token {token})")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path in ("/healthz/down", "/healthz/up"):
            type(self).healthy = self.path.endswith("/up")
            return self.answer(200, f"{NAME}: health {self.path.rsplit('/', 1)[1]}")
        self.do_GET()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: app.py NAME HOST:PORT")
    NAME = sys.argv[1]
    host, _, port = sys.argv[2].rpartition(":")
    http.server.ThreadingHTTPServer((host, int(port)), Handler).serve_forever()
