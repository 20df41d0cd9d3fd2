"""Who holds a token: the Hugging Face Hub's ``whoami``, through huggingface_hub.

The endpoint is the organizer's to set (``HF_ENDPOINT`` or ``--hub-endpoint``), so a
competition can run against a private Hub, and tests against the project's fake Hub. An
answer is kept for a few minutes (keyed by the token's sha256, never the token), so a
participant polling ``status`` does not cost one Hub call a poll.
"""

from __future__ import annotations

import hashlib
import threading
import time

from competition.errors import NotLoggedIn
from podium.errors import HubError

LOGIN_HINT = (
    "run `hf auth login` (or set HF_TOKEN) with a token from huggingface.co/settings/tokens"
)


class HubIdentity:
    def __init__(self, endpoint: str | None = None, *, ttl_s: float = 300.0):
        from podium.hub import resolve_endpoint

        self.endpoint = resolve_endpoint(endpoint)
        self.ttl_s = ttl_s
        self._seen: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def user(self, token: str | None) -> str:
        """The Hub username of ``token``; ``NotLoggedIn`` for none, or one the Hub refuses."""
        if not token:
            raise NotLoggedIn("no Hugging Face token was sent", hint=LOGIN_HINT)
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            hit = self._seen.get(key)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        name = self._ask(token)
        with self._lock:
            self._seen[key] = (name, time.monotonic() + self.ttl_s)
        return name

    def _ask(self, token: str) -> str:
        from huggingface_hub import HfApi

        from podium.hub import status_of, translate_hub_error

        try:
            info = HfApi(endpoint=self.endpoint).whoami(token=token)
        except Exception as exc:  # the client's errors, translated in one place
            if status_of(exc) == 401:
                raise NotLoggedIn(
                    "the Hub does not accept this token (wrong or expired)", hint=LOGIN_HINT
                ) from None
            raise translate_hub_error(exc, action="ask who holds a token", target="whoami") from exc
        name = info.get("name") if isinstance(info, dict) else None
        if not isinstance(name, str) or not name:
            raise HubError("the Hub's whoami named no user", where=self.endpoint)
        return name
