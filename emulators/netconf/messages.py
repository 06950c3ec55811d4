"""NETCONF messages (RFC 6241): hellos, ``<rpc>`` envelopes, ``<rpc-reply>``.

The server's replies are in the base:1.0 namespace and carry every attribute
of the ``<rpc>`` they answer, ``message-id`` first (ncclient matches replies
by message-id and drops anything else). Handlers refuse an operation by
raising :class:`RpcError` (or :class:`RpcErrors` for several at once), which
becomes ``<rpc-error>`` elements.

XML is parsed by lxml without resolving entities, loading DTDs or touching
the network.

An error reply is bounded, whatever was wrong with the request: it lists at most
:data:`MAX_RPC_ERRORS` rpc-errors, the last of them, when more were found, saying how
many were left out (and of which tags); each error-message is cut to
:data:`MAX_ERROR_MESSAGE_CHARS` characters. An edit of 40,000 list entries that all
fail validation is answered in tens of kilobytes, not in megabytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lxml import etree
from lxml.etree import _Element

from emulators.text import digits as _digits

NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


MAX_RPC_ERRORS = 100  # rpc-error elements in one reply, the one saying what was left out too
MAX_ERROR_MESSAGE_CHARS = 1024


def qname(local: str) -> str:
    """The Clark name of ``local`` in the NETCONF base namespace."""
    return f"{{{NETCONF_NS}}}{local}"


# RFC 6241 section 4.3.
ERROR_TYPES = frozenset({"transport", "rpc", "protocol", "application"})
ERROR_SEVERITIES = frozenset({"error", "warning"})
# RFC 6241 appendix A.
ERROR_TAGS = frozenset({
    "in-use", "invalid-value", "too-big", "missing-attribute", "bad-attribute",
    "unknown-attribute", "missing-element", "bad-element", "unknown-element",
    "unknown-namespace", "access-denied", "lock-denied", "resource-denied",
    "rollback-failed", "data-exists", "data-missing", "operation-not-supported",
    "operation-failed", "partial-operation", "malformed-message",
})


class MessageError(ValueError):
    """A message that is not well-formed XML or not the NETCONF element expected."""


class RpcError(Exception):
    """One ``<rpc-error>`` (RFC 6241 4.3), raised by an operation's handler.

    ``path`` is an absolute XPath (``error-path``); the prefixes it uses are
    declared from ``path_namespaces`` (prefix to namespace URI). ``info`` gives
    the children of ``error-info`` in the base namespace (``bad-element``,
    ``session-id``, ...), by local name. Raises ``ValueError`` for an error
    type, tag or severity that RFC 6241 does not define.
    """

    def __init__(
        self,
        tag: str,
        message: str | None = None,
        *,
        error_type: str = "application",
        severity: str = "error",
        app_tag: str | None = None,
        path: str | None = None,
        path_namespaces: Mapping[str, str] | None = None,
        info: Mapping[str, str] | None = None,
    ):
        if tag not in ERROR_TAGS:
            raise ValueError(f"unknown error-tag {tag!r}")
        if error_type not in ERROR_TYPES:
            raise ValueError(f"unknown error-type {error_type!r}")
        if severity not in ERROR_SEVERITIES:
            raise ValueError(f"unknown error-severity {severity!r}")
        super().__init__(message or tag)
        self.tag = tag
        self.message = message
        self.error_type = error_type
        self.severity = severity
        self.app_tag = app_tag
        self.path = path
        self.path_namespaces = dict(path_namespaces or {})
        self.info = dict(info or {})

    def to_element(self) -> _Element:
        error = etree.Element(qname("rpc-error"), nsmap={None: NETCONF_NS})
        etree.SubElement(error, qname("error-type")).text = self.error_type
        etree.SubElement(error, qname("error-tag")).text = self.tag
        etree.SubElement(error, qname("error-severity")).text = self.severity
        if self.app_tag is not None:
            etree.SubElement(error, qname("error-app-tag")).text = self.app_tag
        if self.path is not None:
            nsmap = {prefix: uri for prefix, uri in self.path_namespaces.items()}
            etree.SubElement(error, qname("error-path"), nsmap=nsmap).text = self.path
        if self.message is not None:
            message = etree.SubElement(error, qname("error-message"))
            message.set(XML_LANG, "en")
            message.text = _bounded(self.message)
        if self.info:
            info = etree.SubElement(error, qname("error-info"))
            for name, value in self.info.items():
                etree.SubElement(info, qname(name)).text = value
        return error


class EnvelopeError(Exception):
    """An ``<rpc>`` the server cannot run: ``error`` answers it, in a reply that
    carries ``attributes`` (those of the ``<rpc>``, message-id first)."""

    def __init__(self, attributes: tuple[tuple[str, str], ...], error: RpcError):
        super().__init__(str(error))
        self.attributes = attributes
        self.error = error


class RpcErrors(Exception):
    """Several ``<rpc-error>`` elements in one reply (validation finds them all)."""

    def __init__(self, errors: Sequence[RpcError]):
        if not errors:
            raise ValueError("RpcErrors needs at least one error")
        shown = "; ".join(str(error) for error in errors[:3])
        super().__init__(shown if len(errors) <= 3 else f"{shown}; {len(errors) - 3} more")
        self.errors = tuple(errors)


@dataclass(frozen=True)
class Hello:
    capabilities: tuple[str, ...]
    session_id: int | None = None


@dataclass(frozen=True)
class Rpc:
    """One ``<rpc>``: its attributes in order (``message-id`` first), the whole
    element and its operation element."""

    attributes: tuple[tuple[str, str], ...]
    element: _Element
    operation: _Element = field(repr=False)

    @property
    def message_id(self) -> str | None:
        return dict(self.attributes).get("message-id")

    @property
    def operation_name(self) -> str:
        """The operation's local name (``get-config``, ``kill-session``...)."""
        return str(etree.QName(self.operation).localname)

    @property
    def operation_namespace(self) -> str | None:
        namespace = etree.QName(self.operation).namespace
        return None if namespace is None else str(namespace)


def parse_xml(data: bytes) -> _Element:
    """The root element of a message; ``MessageError`` when it is not well-formed."""
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
        remove_comments=True, remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as error:
        raise MessageError(f"not well-formed XML: {error}") from error
    if root is None:
        raise MessageError("empty message")
    return root


def parse_hello(data: bytes) -> Hello:
    """A peer's ``<hello>``; ``MessageError`` when it is not one or lists no capability."""
    root = parse_xml(data)
    if root.tag != qname("hello"):
        raise MessageError(f"expected <hello>, got <{etree.QName(root).localname}>")
    capabilities = tuple(
        (element.text or "").strip()
        for element in root.iterfind(f"{qname('capabilities')}/{qname('capability')}")
    )
    if not capabilities:
        raise MessageError("a hello without capabilities")
    session_id: int | None = None
    session_element = root.find(qname("session-id"))
    if session_element is not None:
        text = (session_element.text or "").strip()
        if not _digits(text):
            raise MessageError(f"bad session-id {text!r} in hello")
        session_id = int(text)
    return Hello(capabilities, session_id)


def parse_rpc(data: bytes) -> Rpc:
    """An ``<rpc>`` envelope.

    Raises ``MessageError`` for XML that is not well-formed or a root that is
    not ``<rpc>`` in the base namespace, :class:`EnvelopeError` for an
    ``<rpc>`` without ``message-id`` or without exactly one operation; the
    caller answers both with an rpc-error.
    """
    root = parse_xml(data)
    if root.tag != qname("rpc"):
        raise MessageError(f"expected <rpc> in {NETCONF_NS}, got {root.tag}")
    attributes = _attributes_message_id_first(root)
    if "message-id" not in dict(attributes):
        raise EnvelopeError(attributes, RpcError(
            "missing-attribute", "<rpc> has no message-id", error_type="rpc",
            info={"bad-attribute": "message-id", "bad-element": "rpc"}))
    operations = [child for child in root if isinstance(child.tag, str)]
    if len(operations) != 1:
        raise EnvelopeError(attributes, RpcError(
            "missing-element" if not operations else "unknown-element",
            f"<rpc> must hold exactly one operation, not {len(operations)}",
            error_type="rpc", info={"bad-element": "rpc"},
        ))
    return Rpc(attributes, root, operations[0])


def _attributes_message_id_first(root: _Element) -> tuple[tuple[str, str], ...]:
    items = [(str(name), str(value)) for name, value in root.attrib.items()]
    items.sort(key=lambda item: item[0] != "message-id")  # stable: the rest keep their order
    return tuple(items)


def hello(capabilities: Iterable[str], session_id: int | None = None) -> bytes:
    """A ``<hello>``: the server's has a session-id, a client's has none.

    Capability URIs are escaped as XML text (``&`` in a module's query string
    becomes ``&amp;``).
    """
    root = etree.Element(qname("hello"), nsmap={None: NETCONF_NS})
    listed = etree.SubElement(root, qname("capabilities"))
    for capability in capabilities:
        etree.SubElement(listed, qname("capability")).text = capability
    if session_id is not None:
        etree.SubElement(root, qname("session-id")).text = str(session_id)
    return _serialize(root)


def reply(rpc_attributes: Sequence[tuple[str, str]], payload: _Element | None = None) -> bytes:
    """An ``<rpc-reply>`` with ``payload`` (``<data>``, say) or ``<ok/>`` when ``None``."""
    root = _reply_root(rpc_attributes)
    if payload is None:
        etree.SubElement(root, qname("ok"))
    else:
        root.append(payload)
    return _serialize(root)


def error_reply(rpc_attributes: Sequence[tuple[str, str]], errors: Iterable[RpcError]) -> bytes:
    """An ``<rpc-reply>`` holding one ``<rpc-error>`` per error, at most
    :data:`MAX_RPC_ERRORS` of them (:func:`bounded`)."""
    root = _reply_root(rpc_attributes)
    for error in bounded(list(errors)):
        root.append(error.to_element())
    return _serialize(root)


def bounded(errors: Sequence[RpcError]) -> list[RpcError]:
    """``errors`` when there are at most :data:`MAX_RPC_ERRORS`; else the first ones and,
    last, one saying how many were left out. That one has the error-type and error-tag
    of the first error it stands for (a client that sorts refusals by tag sorts this
    reply as before) and names the tags of all of them."""
    if len(errors) <= MAX_RPC_ERRORS:
        return list(errors)
    kept, left_out = errors[:MAX_RPC_ERRORS - 1], errors[MAX_RPC_ERRORS - 1:]
    tags: dict[str, int] = {}
    for error in left_out:
        tags[error.tag] = tags.get(error.tag, 0) + 1
    first = left_out[0]
    summary = RpcError(
        first.tag, f"{len(left_out)} more errors left out (a reply lists at most "
        f"{MAX_RPC_ERRORS}): " + ", ".join(f"{tag} {count}" for tag, count in tags.items()),
        error_type=first.error_type)
    return [*kept, summary]


def _bounded(message: str) -> str:
    if len(message) <= MAX_ERROR_MESSAGE_CHARS:
        return message
    cut = f"… ({len(message)} characters in all)"
    return message[:MAX_ERROR_MESSAGE_CHARS - len(cut)] + cut


def data(*children: _Element) -> _Element:
    """A ``<data>`` element holding ``children``: the payload of get and get-config."""
    element = etree.Element(qname("data"), nsmap={None: NETCONF_NS})
    for child in children:
        element.append(child)
    return element


def _reply_root(rpc_attributes: Sequence[tuple[str, str]]) -> _Element:
    root = etree.Element(qname("rpc-reply"), nsmap={None: NETCONF_NS})
    for name, value in rpc_attributes:
        root.set(name, value)
    return root


def _serialize(root: _Element) -> bytes:
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))
