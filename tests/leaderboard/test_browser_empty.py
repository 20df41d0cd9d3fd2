"""The page on a store whose records were all deleted: it says so, never ``ranked in null``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from test_browser import SERVE, chromium, free_port, pytestmark, wait_for

__all__ = ["pytestmark"]  # the browser marker and the skip without Chromium, as test_browser's


def test_the_page_on_an_emptied_store_says_it_has_no_records(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "records").mkdir(parents=True)  # a store whose records were deleted
    port = free_port()
    proc = subprocess.Popen(
        [*SERVE, "--store", str(store), "--port", str(port), "--no-verify"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url + "records.json", proc)
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        assert re.findall(r'id="status"[^>]*>([^<]*)<', dom) == ["no records in this store yet"]
        assert "null" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
