"""Benchmarks of podium itself: how far its numbers can be trusted, and what they cost.

Each study module measures one thing; ``python -m bench`` runs every one of them (``--list``
names them and what each needs; a part whose machine lacks Docker or a CUDA GPU is
skipped there, with the reason), writes ``bench/results/*.json`` and the plots under
``docs/img/``. ``docs/benchmarks.md`` holds the numbers, the machine and the commands: its
tables are rendered from the results by ``python -m bench.docs`` (``docs*`` modules).

- ``fidelity``: the harness's TPS against an engine with an exact, known token rate.
- ``anchor``: the harness side by side with an established load generator (guidellm).
- ``ppl_check``: PPL through the engine against a direct transformers computation.
- ``noise``: trial-to-trial and run-to-run spread of TPS, and the trials it implies.
- ``views``: the leaderboard table and web page with 10,000 records.
- ``proxy_latency``: what the vLLM launcher's readiness gate adds per request.
- ``vllm_tiny``: the tiny challenge verified on the baseline engine and on real vLLM (Docker).
- ``sweep_cost``: what ``podium submission sweep`` costs on tiny, and what it finds (Docker).
- ``verify_cost``: a whole tiny verification against an earlier commit's, side by side.
- ``gpu_e4b``: the real model's shape on a CUDA GPU (on the GPU machine: ``bash bench/gpu.sh``).
- ``attention_cost``: the reference's attention self-test at the real model's shape (GPU).

Helpers, not benchmarks (``bench.__main__.HELPERS``): ``common``, ``plots``,
``paced_engine``, ``vllm_sandbox``, and the docs' renderer ``docs`` with its ``docs_*``
parts. The calibration of the verifier's checks, whole verifications of honest entries and
cheats, is ``calibration/``.
"""
