"""A fault-injecting HTTP proxy on 127.0.0.1 in front of a real server, for backend tests.

Each incoming request takes the next action of ``plan`` (then ``pass``): ``pass`` forwards it,
``400`` / ``401`` / ``429`` / ``500`` answer with that status, ``hang`` sleeps past the client's
timeout. The proxy counts requests and the largest number it held in flight at once, and keeps
how long each forwarded request took upstream (``forward_seconds``).

``down_after=N`` simulates a server that dies: the first N requests are forwarded, later ones are
dropped without an answer, and once the N-th answer is sent the proxy stops listening
(connection refused). A new proxy on the same ``port`` is the server coming back (the cache knows
a model by its endpoint: another port is another server).
"""

from __future__ import annotations

import errno
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    def __init__(self, upstream: str, plan: list[str] | None = None, delay: float = 0.0, hang_seconds: float = 5.0,
                 down_after: int | None = None, port: int = 0):
        self.upstream = upstream.rstrip("/")
        self.plan = list(plan or [])
        self.delay = delay
        self.hang_seconds = hang_seconds
        self.lock = threading.Lock()
        self.down_after = down_after
        self.requests = 0
        self.forwarded = 0
        self.answered = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.actions: list[str] = []
        self.forward_seconds: list[float] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy.lock:
                    proxy.requests += 1
                    action = proxy.plan.pop(0) if proxy.plan else "pass"
                    if proxy.down_after is not None and proxy.forwarded >= proxy.down_after:
                        action = "drop"
                    if action == "pass":
                        proxy.forwarded += 1
                    proxy.actions.append(action)
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                try:
                    if proxy.delay:
                        time.sleep(proxy.delay)
                    if action in ("400", "401", "429", "500"):
                        self._reply(int(action), b'{"error": {"message": "injected failure"}}')
                    elif action == "drop":
                        self.close_connection = True  # the client sees the connection close unanswered
                    elif action == "hang":
                        time.sleep(proxy.hang_seconds)
                        self._reply(504, b'{"error": {"message": "too late"}}')
                    else:
                        started = time.monotonic()
                        self._forward(body)
                        with proxy.lock:
                            proxy.forward_seconds.append(time.monotonic() - started)
                            proxy.answered += 1
                            if proxy.answered == proxy.down_after:
                                threading.Thread(target=proxy.stop, daemon=True).start()
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1

            def _reply(self, status: int, payload: bytes, content_type: str = "application/json"):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _forward(self, body):
                path = self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
                request = urllib.request.Request(
                    proxy.upstream + path, data=body, method=self.command,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=300) as response:
                        self._reply(response.status, response.read(), response.headers.get("Content-Type"))
                except urllib.error.HTTPError as error:
                    self._reply(error.code, error.read())

        self.server = listen(port, Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: new connections are refused."""
        self.server.shutdown()
        self.server.server_close()

    def __exit__(self, *exc) -> None:
        self.stop()


def listen(port: int, handler) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:``port`` (0: any free port). A given port is that of a proxy that has
    just stopped (the same server coming back): SO_REUSEADDR passes its connections in TIME_WAIT,
    and a connection still closing is waited for."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError as error:
            if error.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
