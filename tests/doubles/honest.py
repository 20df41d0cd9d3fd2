"""Honest yardsticks: engines that attack no check.

- ``Honest``: the baseline unchanged, the yardstick every cheat is measured against.
- ``Undeclared``: an approximation the engine makes on every path without declaring it
  (a window of ``UNDECLARED_WINDOW``, weights rounded to ``UNDECLARED_QUANT``), as a
  custom engine's own approximation would be. The verifier's reference runs the
  unmodified model and judges it by the quality budget alone (``ppl.cap``,
  ``integrity.reference-decode`` must stay quiet inside the cap).
"""

from __future__ import annotations

import os
from typing import Any

from engines.baseline.model import BaselineEngine


class Honest(BaselineEngine):
    """The baseline unchanged: the yardstick every cheat is measured against."""


class Undeclared(BaselineEngine):
    """Honest, with an approximation it does not declare, on every path alike: a sliding
    window of ``UNDECLARED_WINDOW`` and/or weights rounded to ``UNDECLARED_QUANT`` (int8,
    int4). The verifier's reference runs the unmodified model and judges it by the budget."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if os.environ.get("UNDECLARED_WINDOW"):
            kwargs["sliding_window"] = int(os.environ["UNDECLARED_WINDOW"])
        if os.environ.get("UNDECLARED_QUANT"):
            kwargs["quantization"] = os.environ["UNDECLARED_QUANT"]
        super().__init__(*args, **kwargs)
