"""The verification's stages, in the order ``verifier.pipeline`` runs them.

Each module is one stage or a few that belong together, named as the report's ``stages``
name them; a stage gathers (through the runner, the harness or the reference) and hands
what it gathered to ``verifier.checks``, which judge it. No stage judges.

- ``run``: the record a verification builds, and how every stage is timed into it;
- ``preparation``: intake → environment → data → weights → rebuild (with the image's
  limits) → start;
- ``isolation``: the sandbox probe, started right after ``start``;
- ``evaluation``: ready and the timed evaluation (the harness), then ``checks``, and for
  vLLM what really ran (``runtime``);
- ``judging``: ``reference-load`` (the verifier's own model, its self-test) and, once the
  participant's engine has stopped, ``reference``;
- ``finish``: ``verdict``, the report and its signature.
"""
