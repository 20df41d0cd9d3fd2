"""Participant side: init, validate, freeze, package, import and self-check submissions."""
