"""Run moto's S3 server (the ``moto_server`` command's app) with its writes made atomic.

S3 makes a conditional PUT atomic: of two concurrent ``If-None-Match: *`` PUTs of one key, one
succeeds and the other gets 412 (or 409 ConditionalRequestConflict). moto checks for the key and
then stores the object in two steps, on a server that handles each request in its own thread,
so two racing creates can both succeed and the second silently replaces the first: a lost
commit that S3 itself never produces. Serialising the requests that write (anything but GET
and HEAD) gives S3's guarantee back; reads stay concurrent.

Usage: ``python s3_serve.py HOST PORT``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


class AtomicWrites:
    """WSGI middleware: one write request at a time, its whole response produced under the lock."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict, start_response: Any) -> Any:
        if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return self.app(environ, start_response)
        with self.lock:
            body = self.app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()


def main(host: str, port: int) -> None:
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, AtomicWrites(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
