"""Global object ids (Relay's ``Node``): one opaque, stable ``id`` per paper, author,
category and signer, which ``node(id:)`` and ``nodes(ids:)`` look up again.

An id is the unpadded base64url of ``<type>:<key>`` (the key: ``pithNumber``, ``nameKey``,
``code`` or ``signerId``), so it is URL-safe, the same on every backend and after every
reload; clients should treat it as opaque. Only the canonical spelling of an id names its
object: anything else (another padding, a type that is no ``Node``, not base64url at all)
names nothing.

>>> node_id("Category", "cs.LG")
'Q2F0ZWdvcnk6Y3MuTEc'
>>> parse_node_id("Q2F0ZWdvcnk6Y3MuTEc")
('Category', 'cs.LG')
>>> [parse_node_id(text) for text in ("Q2F0ZWdvcnk6Y3MuTEc=", "", "bm9wZTp4", "!")]
[None, None, None, None]
"""

from __future__ import annotations

import binascii
from base64 import urlsafe_b64decode, urlsafe_b64encode
from collections.abc import Callable
from typing import Any

import strawberry

from pith_graph.api.fields import resolver

__all__ = ["NODE_KEYS", "Node", "id_of", "node_id", "parse_node_id"]

#: The types that are nodes, and the attribute (on the GraphQL object and on the reader's
#: record alike) that keys each.
NODE_KEYS: dict[str, str] = {
    "Paper": "pith_number",
    "Author": "name_key",
    "Category": "code",
    "Signer": "signer_id",
}


def node_id(type_name: str, key: str) -> str:
    """The id of the ``type_name`` whose key is ``key``."""
    return urlsafe_b64encode(f"{type_name}:{key}".encode()).rstrip(b"=").decode("ascii")


def parse_node_id(text: str) -> tuple[str, str] | None:
    """The type and key an id names; ``None`` unless ``text`` is the canonical id of some
    key of a node type (the reader then says whether that object exists)."""
    try:
        decoded = urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        return None
    type_name, colon, key = decoded.partition(":")
    if not colon or type_name not in NODE_KEYS or node_id(type_name, key) != text:
        return None
    return type_name, key


def id_of(type_name: str) -> Callable[[Any], str]:
    """The id of an object (or record) of ``type_name``."""
    attribute = NODE_KEYS[type_name]
    return lambda source: node_id(type_name, getattr(source, attribute))


@strawberry.interface(
    description="An object with a global id: opaque (do not parse it), stable across servers, "
    "backends and reloads, and looked up again with node(id:) or nodes(ids:); since 0.9.0."
)
class Node:
    @resolver("The global id: opaque, stable, URL-safe.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(id_of(type(self).__name__)(self))
