"""Verification fanned out over a jobs service: a server job and a harness job per request.

``jobs`` is the interface (job specs, stages, the report carried back in the log),
``hf`` runs it on Hugging Face Jobs, ``local`` on this machine's Docker for rehearsals,
``dispatcher`` claims requests and drives the job pairs, ``harness_job`` is what runs
inside the harness job.
"""
