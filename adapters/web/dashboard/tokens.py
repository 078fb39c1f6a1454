"""Random tokens, their signatures and hashes: what the dashboard hands a browser, and
what it keeps of it (only a SHA-256: a copy of the database opens no session)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


def new_token() -> str:
    return secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def sign(secret: bytes, value: str) -> str:
    mac = hmac.new(secret, value.encode(), hashlib.sha256).digest()
    return f"{value}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"


def unsign(secret: bytes, signed: str | None) -> str | None:
    """The value of a signed string, or None when the signature does not match."""
    if not signed or "." not in signed or len(signed) > 4096:
        return None
    value = signed.rsplit(".", 1)[0]
    return value if hmac.compare_digest(sign(secret, value), signed) else None


def pkce_challenge(verifier: str) -> str:
    """RFC 7636 S256: base64url(SHA-256(verifier)), unpadded."""
    raw = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


__all__ = ["digest", "new_token", "pkce_challenge", "same", "sign", "unsign"]
