"""Benchmarks of podium itself: how far its numbers can be trusted, and what they cost.

Each module measures one thing and returns a JSON-able dict; ``python -m bench`` runs the
CPU parts, writes ``bench/results/*.json`` and the plots under ``docs/img/``.
``docs/benchmarks.md`` holds the numbers, the machine and the commands.

- ``fidelity``: the harness's TPS against an engine with an exact, known token rate.
- ``anchor``: the harness side by side with an established load generator (guidellm).
- ``ppl_check``: PPL through the engine against a direct transformers computation.
- ``noise``: trial-to-trial and run-to-run spread of TPS, and the trials it implies.
- ``views``: the leaderboard table and web page with 10,000 records.
- ``gpu_e4b``: the real model shape on a GPU (run by hand there; not part of the CPU set).
"""
