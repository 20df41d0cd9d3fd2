"""Ed25519 signatures over canonical JSON.

A signed document carries a ``signature`` object ``{"alg": "ed25519", "key_id": ...,
"value": <base64>}``; the signature covers the canonical JSON of the document with the
``signature`` member removed. The key id is the first 16 hex digits of the sha256 of
the raw 32-byte public key. Keys are stored as PEM (PKCS#8 private, SubjectPublicKeyInfo
public).
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from podium.canonical import canonical_json
from podium.errors import SignatureError, UsageError

ALG = "ed25519"


def key_id(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class KeyPair:
    private_key: Ed25519PrivateKey

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)

    @classmethod
    def generate(cls) -> KeyPair:
        return cls(Ed25519PrivateKey.generate())

    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_pem(self) -> bytes:
        return public_pem(self.public_key)


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def public_raw_b64(public: Ed25519PublicKey) -> str:
    """The raw 32-byte public key in base64: how a challenge spec pins a key."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def public_key_from_b64(value: str, *, where: str = "public key") -> Ed25519PublicKey:
    """The key of ``public_raw_b64``; anything else is a ``SignatureError`` naming ``where``."""
    try:
        raw = base64.b64decode(value, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise SignatureError(
            f"{where} is not a base64 Ed25519 public key (32 raw bytes)", where=where
        ) from exc


def write_keypair(keypair: KeyPair, private_path: Path, *, overwrite: bool = False) -> Path:
    """Write ``private_path`` (mode 0600) and ``private_path`` + ``.pub``; return the latter."""
    public_path = private_path.with_name(private_path.name + ".pub")
    for p in (private_path, public_path):
        if p.exists() and not overwrite:
            raise UsageError(f"{p} already exists", hint="choose another path or pass --force")
    private_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(keypair.private_pem())
    public_path.write_bytes(keypair.public_pem())
    return public_path


def private_key_from_pem(pem: bytes, *, where: str) -> KeyPair:
    """The Ed25519 private key in ``pem``; anything else is a ``SignatureError`` naming
    ``where`` (a file, an environment variable)."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"{where} is not a PEM private key: {exc}", where=where) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError(f"{where} is not an Ed25519 key", where=where)
    return KeyPair(key)


def public_key_from_pem(
    pem: bytes, *, where: str, accept_private: bool = False
) -> Ed25519PublicKey:
    """The Ed25519 public key in ``pem`` (with ``accept_private``, a private key's PEM
    gives its public half); anything else is a ``SignatureError`` naming ``where``."""
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as exc:
        if not accept_private:
            raise SignatureError(f"{where} is not a PEM public key: {exc}", where=where) from None
        try:
            return private_key_from_pem(pem, where=where).public_key
        except SignatureError:
            raise SignatureError(f"{where} is not a PEM public key", where=where) from None
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureError(f"{where} is not an Ed25519 public key", where=where)
    return key


def load_private_key(path: Path) -> KeyPair:
    try:
        pem = path.read_bytes()
    except FileNotFoundError as exc:
        raise UsageError(
            f"no key file at {path}", hint="create one with `podium keys generate`"
        ) from exc
    return private_key_from_pem(pem, where=str(path))


def load_public_key(path: Path) -> Ed25519PublicKey:
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise UsageError(f"no public key file at {path}") from exc
    # Also accept the private key file: its public half is what is needed.
    return public_key_from_pem(data, where=str(path), accept_private=True)


def _payload(doc: dict[str, Any]) -> bytes:
    return canonical_json({k: v for k, v in doc.items() if k != "signature"})


def sign_document(doc: dict[str, Any], keypair: KeyPair) -> dict[str, Any]:
    """Return a copy of ``doc`` with a ``signature`` member added."""
    sig = keypair.private_key.sign(_payload(doc))
    out = {k: v for k, v in doc.items() if k != "signature"}
    out["signature"] = {
        "alg": ALG,
        "key_id": keypair.key_id,
        "value": base64.b64encode(sig).decode("ascii"),
    }
    return out


def verify_document(doc: dict[str, Any], public: Ed25519PublicKey) -> str:
    """Check ``doc``'s signature; return its key id or raise ``SignatureError``."""
    sig = doc.get("signature")
    if not isinstance(sig, dict) or not isinstance(sig.get("value"), str):
        raise SignatureError("the document carries no signature")
    if sig.get("alg") != ALG:
        raise SignatureError(f"unsupported signature algorithm {sig.get('alg')!r}")
    expected_id = key_id(public)
    if sig.get("key_id") != expected_id:
        raise SignatureError(
            f"signed with key {sig.get('key_id')!r}, but the public key given is {expected_id!r}",
            hint="pass the public key whose id matches the signature",
        )
    try:
        raw = base64.b64decode(sig["value"], validate=True)
        public.verify(raw, _payload(doc))
    except (InvalidSignature, ValueError) as exc:
        raise SignatureError("the signature does not match the document: it was altered") from exc
    return expected_id
