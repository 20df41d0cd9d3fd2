"""Drive headless Chromium through the DevTools protocol over ``--remote-debugging-pipe``.

The browser reads commands from its fd 3 and writes answers and events to its fd 4, each
one JSON message ended by a NUL byte: no websocket, no extra package. Enough to set a
window size, open a page, click and read what it shows (``Runtime.evaluate``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any


class Browser:
    """One headless Chromium and one page in it, at ``width`` x ``height`` CSS pixels."""

    def __init__(self, chromium: str, profile: Path, width: int = 1280, height: int = 900):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # in the child: its fds 3 and 4 are the pipe's ends
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            pass_fds=(3, 4),  # kept open in the child once wire() has set them
            preexec_fn=wire,  # the pipe's ends must sit at fds 3 and 4
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable", session=True)
        self.resize(width, height)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise AssertionError("Chromium closed its DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, *, session: bool = False, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    def resize(self, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def js(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise)."""
        out = self.call(
            "Runtime.evaluate",
            session=True,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in out:
            raise AssertionError(f"{expression}: {out['exceptionDetails']}")
        return out.get("result", {}).get("value")

    def wait(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except AssertionError as exc:
                # a page that is navigating has no context to evaluate in yet: ask again
                if "navigated or closed" not in str(exc) and "context" not in str(exc):
                    raise
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"{expression} stayed falsy for {timeout}s")

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait("document.readyState === 'complete' && location.href !== 'about:blank'")

    def html(self) -> str:
        """The page's DOM as HTML (works with scripts off, unlike ``js``)."""
        root = self.call("DOM.getDocument", session=True)["root"]["nodeId"]
        out: str = self.call("DOM.getOuterHTML", session=True, nodeId=root)["outerHTML"]
        return out

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._to_browser)
        os.close(self._from_browser)
