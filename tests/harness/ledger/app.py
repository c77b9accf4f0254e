#!/usr/bin/python3
"""The Python application of electd's data-plane tests (tests/harness/ledger).

An ordinary http.server, standard library only: HTTP/1.0, one request per
connection, and never a "100 Continue" (BaseHTTPRequestHandler sends one only
with protocol_version HTTP/1.1). It keeps the same ledger as the Go
application (tests/harness/ledger/goapp.go): one JSON line per event, appended with a
single os.write on a file opened with O_APPEND, "arrive" before a byte of the
body is read, "done" once the body (Content-Length or chunked, with its
trailers) is read. A request to /drop is logged ("arrive"), its body read,
and its connection closed without an answer: an application that drops
requests (a crashing worker), for the proxy's re-sends to be counted.

  python3 app.py NAME HOST:PORT LEDGER
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse


class Ledger:
    def __init__(self, path):
        self.fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
        self.lock = threading.Lock()

    def write(self, entry):
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        with self.lock:
            os.write(self.fd, line)


def lower(headers):
    out = {}
    for k, v in headers.items():
        out.setdefault(k.lower(), []).append(v)
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "ledger-py"

    def log_message(self, fmt, *args):
        pass  # one line per request would drown the test's log

    def do_GET(self):
        self.handle_one()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def handle_one(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/healthz":
            self.answer(b"")
            return
        header = lower(self.headers)
        first = lambda k: header.get(k, [""])[0]
        entry = {
            "ev": "arrive", "app": self.server.name, "lang": "python",
            "id": first("x-request-id") or first("electd-request-id"),
            "token": first("electd-fencing-token"), "leader": first("electd-leader-id"),
            "method": self.command, "path": url.path, "proto": self.request_version,
            "at": time.time_ns(), "header": header, "body_size": 0,
        }
        self.server.ledger.write(entry)
        if url.path == "/drop":
            self.read_body()
            self.close_connection = True  # unanswered: nothing was written
            return
        sleep = urllib.parse.parse_qs(url.query).get("sleep", ["0"])[0]
        if sleep.isdigit() and int(sleep) > 0:
            time.sleep(int(sleep) / 1000)
        size, trailer = self.read_body()
        done = dict(entry, ev="done", at=time.time_ns(), body_size=size, trailer=trailer)
        del done["header"]
        self.server.ledger.write(done)
        self.answer(("%s %s %s\n" % (self.server.name, entry["token"], entry["id"])).encode())

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self.read_chunked()
        n = int(self.headers.get("Content-Length") or 0)
        left = n
        while left > 0:
            b = self.rfile.read(min(left, 65536))
            if not b:
                raise ConnectionError("body cut short")
            left -= len(b)
        return n, {}

    def read_chunked(self):
        size = 0
        while True:
            line = self.rfile.readline(1024)
            n = int(line.split(b";")[0].strip(), 16)
            if n == 0:
                break
            self.rfile.read(n)
            self.rfile.readline(8)  # the chunk's CRLF
            size += n
        trailer = {}
        while True:
            line = self.rfile.readline(8192).strip()
            if not line:
                return size, trailer
            k, _, v = line.decode("latin-1").partition(":")
            trailer.setdefault(k.strip().lower(), []).append(v.strip())

    def answer(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-App", self.server.name)
        self.send_header("Electd-Leak", self.server.name)  # the proxy must keep it from the client
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A proxy that gives a request up closes its connection: one line,
        # not a traceback per request.
        err = sys.exc_info()[1]
        if isinstance(err, (BrokenPipeError, ConnectionResetError)):
            return
        print("ledger app %s: %r from %s" % (self.name, err, client_address), file=sys.stderr, flush=True)


def main():
    name, listen, ledger = sys.argv[1:4]
    host, port = listen.rsplit(":", 1)
    srv = Server((host, int(port)), Handler)
    srv.name, srv.ledger = name, Ledger(ledger)
    print("ledger app %s (python) on %s, ledger %s" % (name, listen, ledger), file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
