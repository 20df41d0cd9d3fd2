"""Inference engines that podium can judge.

An engine is anything that speaks the HTTP protocol in ``docs/engine-protocol.md`` (a
subset of vLLM's OpenAI-compatible server). The verifier only ever talks to an engine
over HTTP, so this package stands alone: it imports nothing from the rest of podium and
needs only the standard library, torch, transformers, tokenizers, safetensors and numpy,
which is all an engine container holds.

- ``engines.baseline``: the unoptimised reference, plain transformers + torch behind a
  standard-library HTTP server.
- ``engines.vllm_launcher``: turns a frozen engine config into vLLM server arguments,
  warms the engine up before readiness (standard library only; runs in the vLLM image).

Baseline variants that cheat or break, for the verifier's tests, live with the tests
(``tests/doubles``), outside the wheel.
"""
