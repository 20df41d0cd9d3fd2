"""Contracts: JSON Schemas for every document that crosses a trust boundary, their
loader/validator, and frozen dataclasses on top. No logic beyond loading and validating.
"""

from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from schemas.findings import Finding
from schemas.validate import load_and_validate, schema_kinds, validate

__all__ = [
    "ChallengeSpec",
    "Finding",
    "list_challenges",
    "load_and_validate",
    "load_challenge",
    "schema_kinds",
    "validate",
]
