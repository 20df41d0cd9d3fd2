"""Wiring: build an engine, wrap it in the API and the HTTP server, run it.

``serve`` is what containers and the command line run (blocking, stops cleanly on
SIGTERM or SIGINT); ``start_server`` runs the same server in a thread for tests.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from engines.baseline.api import Api
from engines.baseline.model import BaselineEngine
from engines.baseline.self_test import report
from engines.baseline.server import DEFAULT_MAX_BODY_BYTES, EngineServer


def build_server(
    model_path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    served_model_name: str | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    max_model_len: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    engine_class: type[BaselineEngine] = BaselineEngine,
    engine_kwargs: dict[str, Any] | None = None,
    quiet: bool = True,
    self_test_report: str | Path | None = None,
) -> EngineServer:
    """Load the model and bind the port; nothing is served until started. What the
    attention self-test found goes to stderr, and as JSON to ``self_test_report``."""
    engine = engine_class(
        model_path,
        device=device,
        dtype=dtype,
        max_model_len=max_model_len,
        **(engine_kwargs or {}),
    )
    report(engine.attention_check, self_test_report)
    name = served_model_name or Path(model_path).name
    return EngineServer(Api(engine, name), host, port, max_body_bytes=max_body_bytes, quiet=quiet)


def start_server(
    model_path: str | Path, host: str = "127.0.0.1", port: int = 0, **kwargs: Any
) -> EngineServer:
    """Build a server and serve it from a background thread; ``stop()`` it when done."""
    return build_server(model_path, host, port, **kwargs).start()


def serve(
    model_path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    on_ready: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> None:
    """Serve until SIGTERM or SIGINT; once listening, call ``on_ready(url)`` (by default,
    print ``ready on http://HOST:PORT``)."""
    server = build_server(model_path, host, port, **kwargs)

    stoppers: list[threading.Thread] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        # shutdown() waits for the serve loop, which runs in this thread: ask from another.
        thread = threading.Thread(target=server.stop, name="engine-stop", daemon=True)
        stoppers.append(thread)
        thread.start()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if on_ready is None:
            print(f"ready on {server.url}", flush=True)
        else:
            on_ready(server.url)
        server.serve_forever()
    finally:
        # let the stop finish closing the socket before the interpreter shuts down: a
        # daemon thread still running at finalisation can abort the process (SIGABRT)
        for thread in stoppers:
            thread.join(timeout=10)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
