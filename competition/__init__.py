"""The competition around the verification: a door, a roster, quotas, a queue in a database.

``verifier/`` verifies one bundle and ``leaderboard/`` keeps the signed rows; this layer
stands above both and is what many parties who do not trust each other meet:

- ``roster``: which Hugging Face users make up each team (a TOML file, schema-checked);
- ``identity``: who holds a token, asked of the Hub's ``whoami``;
- ``quota``: submissions per user and per team over a rolling window;
- ``db``: the requests, their history, the bundles and the quota ledger in SQLite or
  PostgreSQL, applying the queue's own pure transitions (``verifier.scale.queue.request``);
- ``door``: intake at the door (the safe reader, the roster, the quotas, privacy);
- ``server``: the HTTP front (Starlette under uvicorn);
- ``client``: the participant's, the organizer's and the worker's side of that HTTP API;
- ``admin``: counts, and an ETA from measured verification times and the live workers.

Nothing in ``verifier/`` or ``leaderboard/`` imports this package.
"""
