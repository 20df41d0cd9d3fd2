"""The baseline engine: plain transformers + torch behind vLLM's OpenAI-compatible API.

It is podium's unoptimised reference: it runs anywhere (CPU included), serves one
generation at a time, and answers exactly the protocol in ``docs/engine-protocol.md``.

Python API::

    from engines.baseline import serve, start_server
    serve("path/to/model", host="127.0.0.1", port=8000)          # blocks; SIGTERM stops it
    with start_server("path/to/model", port=0) as server:       # in a thread, for tests
        print(server.url)

Variants (adversarial test engines, instrumented engines) subclass ``BaselineEngine`` and
override its hooks (``forward``, ``prefill``, ``prompt_logprobs_from_logits``,
``select_next_token``, ``before_step``, ``report_usage``; see ``engines.baseline.model``),
then pass the class as ``engine_class``.

torch and transformers are imported only when an engine is built, so importing this
package is cheap.
"""

from __future__ import annotations

from engines.baseline.app import build_server, serve, start_server
from engines.baseline.model import BaselineEngine

__all__ = ["BaselineEngine", "build_server", "serve", "start_server"]
