"""Stop strings, as vLLM applies them to the generated text.

Generation ends at the first step whose text completes a stop string; the text is cut
just before it (``include_stop_str_in_output`` false), while the token that completed it
is still counted and returned, as in vLLM. While streaming, text that could be the start
of a stop string is held back until it is known not to be one.
"""

from __future__ import annotations


class StopStrings:
    """Feed generated text piece by piece; get back what may be shown, and the stop hit."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = tuple(s for s in stops if s)
        self._hold = max((len(s) for s in self.stops), default=1) - 1
        self._text = ""
        self._sent = 0
        self.hit: str | None = None

    def feed(self, piece: str) -> str:
        """Add ``piece``; return the text now safe to show (cut at a stop string)."""
        if self.hit is not None:
            return ""
        start = max(0, len(self._text) - self._hold)
        self._text += piece
        found = [(self._text.find(s, start), s) for s in self.stops]
        found = [(i, s) for i, s in found if i >= 0]
        if found:
            index, self.hit = min(found)
            return self._take(index)
        return self._take(len(self._text) - self._hold)

    def flush(self) -> str:
        """The text held back, once generation has ended without a stop string."""
        return "" if self.hit is not None else self._take(len(self._text))

    def _take(self, end: int) -> str:
        if end <= self._sent:
            return ""
        out, self._sent = self._text[self._sent : end], end
        return out
