"""Ways to look at a store: terminal table, exports, web page."""
