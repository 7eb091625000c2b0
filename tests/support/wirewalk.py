"""A small protobuf wire-format walker for tests of the lean decode (``wire/lean.py``).

The lean schema reads a few sub-messages as ``bytes``. Where an encoder put the same
singular sub-message field twice into one message, a full parse *merges* the copies (and
checks both) while a ``bytes`` field keeps the last one: the one difference between the two
decodes that ``wire/lean.py`` documents. No protobuf encoder produces such input; random byte
mutations sometimes do. :func:`repeats_a_singular_submessage` says whether ``data`` contains
such a repeat anywhere, walking the *full* schema's descriptors.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor


def _varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        if i >= len(b) or s > 63:
            raise ValueError("truncated varint")
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def _fields(b: bytes) -> list[tuple[int, bytes | None]]:
    """``(field number, payload of a length-delimited field or None)`` in wire order;
    raises ``ValueError`` on malformed input."""
    out: list[tuple[int, bytes | None]] = []
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        wt = tag & 7
        if wt == 0:
            _, i = _varint(b, i)
            out.append((tag >> 3, None))
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated field")
            out.append((tag >> 3, b[i : i + n]))
            i += n
        elif wt == 1:
            i += 8
            out.append((tag >> 3, None))
        elif wt == 5:
            i += 4
            out.append((tag >> 3, None))
        else:
            raise ValueError("group or bad wire type")
    return out


def repeats_a_singular_submessage(data: bytes, desc: Descriptor) -> bool:
    """True when, somewhere in ``data`` read as ``desc``, a singular message-typed field (or
    two members of one oneof of message type) occurs more than once in one message.
    Undecodable stretches are skipped (they are not a repeat)."""
    try:
        fields = _fields(data)
    except ValueError:
        return False
    by_number = {f.number: f for f in desc.fields}
    seen_singular: set[int] = set()
    seen_oneof: set[str] = set()
    for num, payload in fields:
        fd = by_number.get(num)
        if fd is None or fd.type != FieldDescriptor.TYPE_MESSAGE or payload is None:
            continue
        if not fd.is_repeated:
            if num in seen_singular:
                return True
            seen_singular.add(num)
            oneof = fd.containing_oneof
            if oneof is not None:
                if oneof.name in seen_oneof:
                    return True
                seen_oneof.add(oneof.name)
        if fd.message_type is not None and repeats_a_singular_submessage(payload, fd.message_type):
            return True
    return False
