"""A real S3-compatible server for the object-store tests: moto's S3 server, run
as its own process on 127.0.0.1 and stopped by its process id.

moto honours ``If-None-Match: *`` on PutObject (a second conditional create of a key fails with
412 PreconditionFailed), which is what the commit protocol relies on; ``s3_serve.py`` runs its
app with writes serialised, since moto's check and store are two steps that two racing creates
can interleave (S3 makes them atomic).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass

BUCKET = "lake"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    process: subprocess.Popen
    endpoint: str

    @property
    def env(self) -> dict[str, str]:
        """The standard variables that point a client at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def location(self, name: str | None = None) -> str:
        """A fresh prefix in the bucket."""
        return f"s3://{BUCKET}/{name or uuid.uuid4().hex[:12]}"

    def keys(self, prefix: str = "") -> list[str]:
        """Every key in the bucket under ``prefix`` (through the server's HTTP API)."""
        import obstore
        from obstore.store import S3Store

        store = S3Store(
            BUCKET,
            config={
                "aws_endpoint": self.endpoint,
                "aws_access_key_id": "testing",
                "aws_secret_access_key": "testing",
                "aws_region": REGION,
            },
            client_options={"allow_http": True},
        )
        return sorted(m["path"] for chunk in obstore.list(store, prefix or None) for m in chunk)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the test process ends, so a test run that
    is itself killed (no fixture teardown) leaves no server behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start(timeout: float = 60.0) -> S3Server:
    """Start moto's S3 server (``s3_serve.py``) on a free port of 127.0.0.1 and create the bucket."""
    if importlib.util.find_spec("moto") is None:
        raise RuntimeError("moto's server is not installed (the test extra installs moto[server])")
    port = free_port()
    serve = os.path.join(os.path.dirname(os.path.abspath(__file__)), "s3_serve.py")
    proc = subprocess.Popen(
        [sys.executable, serve, "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    endpoint = f"http://127.0.0.1:{port}"
    server = S3Server(proc, endpoint)
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the S3 server did not start on {endpoint}") from None
            time.sleep(0.2)
    req = urllib.request.Request(f"{endpoint}/{BUCKET}", method="PUT")
    urllib.request.urlopen(req, timeout=10).read()
    return server
