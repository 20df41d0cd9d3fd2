"""The page on a store whose records were all deleted: it says so, never ``ranked in null``."""

from __future__ import annotations

import re
from pathlib import Path

from test_browser import chromium, pytestmark, serving

__all__ = ["pytestmark"]  # the browser marker and the skip without Chromium, as test_browser's


def test_the_page_on_an_emptied_store_says_it_has_no_records(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "records").mkdir(parents=True)  # a store whose records were deleted
    with serving("--store", str(store), "--no-verify") as url:
        dom = chromium("--dump-dom", url, cwd=tmp_path)
        assert 'data-ready="1"' in dom
        assert re.findall(r'id="status"[^>]*>([^<]*)<', dom) == ["no records in this store yet"]
        assert "null" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)
