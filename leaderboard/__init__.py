"""Records, stores (local folder, Hub dataset) and views (terminal table, web page)."""
