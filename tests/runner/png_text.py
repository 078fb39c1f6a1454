"""Read a PNG's text chunks (tEXt, zTXt, iTXt) without an image library."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, in order."""
    assert png.startswith(SIGNATURE), "not a PNG"
    out, pos = [], len(SIGNATURE)
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        out.append((kind, png[pos + 8 : pos + 8 + length]))
        pos += 12 + length
    return out


def png_text(png: bytes) -> dict[str, str]:
    """Keyword -> text of the PNG's text chunks."""
    text: dict[str, str] = {}
    for kind, data in png_chunks(png):
        if kind == b"tEXt":
            key, _, value = data.partition(b"\0")
            text[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = data.partition(b"\0")
            text[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = data.partition(b"\0")
            compressed, body = rest[0], rest[2:]
            _lang, _, body = body.partition(b"\0")
            _translated, _, body = body.partition(b"\0")
            text[key.decode("latin-1")] = (zlib.decompress(body) if compressed else body).decode(
                "utf-8"
            )
    return text
