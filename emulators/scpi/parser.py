"""The instrument side of SCPI: parse program messages, dispatch, keep the error queue.

Follows IEEE 488.2 / SCPI-99 closely enough for real drivers: short and long
header forms, case-insensitive, default nodes optional (``:SYST:ERR[:NEXT]?``);
compound messages with ``;`` where a header without a leading ``:`` is relative
to the previous command's branch; channel lists with ranges (``(@1:4,9)``);
every byte 0x00-0x09 and 0x0B-0x20 is white space (IEEE 488.2 §7.4.1.2); and on
any error an entry in the client's error queue with its ESR bit set (see
:mod:`emulators.scpi.status`), no reply from the query that failed, the rest of
that message discarded, and the parser ready for the next line. A query after
``*IDN?`` in the same message is a query error, -440 (§6.5.7.5.7).

One interpreter serves one client: it holds that client's status. The device
behind it (the map, the ports, the settings) is shared by every client.

Numeric header suffixes (``:SENSe2:CHANnel1:POWer?``) select an instrument's
channel; handlers that need them are registered as ``suffixed_handlers`` and get
them as a mapping from the node's long form in capitals to the number
(``{"SENSE": 2, "CHANNEL": 1}``). A relative header in a compound message
inherits the suffixes of its branch. A reply may be ``bytes`` (IEEE 488.2
definite-length block data); a message whose replies include one is answered
as bytes.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from drivers.scpi.codes import SCPI_ERRORS
from drivers.scpi.common import INDEFINITE_RESPONSES
from drivers.scpi.table import ScpiCommand, short_form
from emulators.scpi.status import ClientStatus, ErrorQueue
from emulators.text import digits as _digits

__all__ = ["ClientStatus", "ErrorQueue"]  # the queue lived here first; importers keep working


class ScpiError(Exception):
    """An error the instrument reports through its queue."""

    def __init__(self, code: int, detail: str = "", *, messages: Mapping[int, str] = SCPI_ERRORS):
        self.code = code
        base = messages.get(code) or SCPI_ERRORS.get(code, "Device-specific error")
        self.text = f"{base}; {detail}" if detail else base
        super().__init__(f"{code},{self.text}")


@dataclass(frozen=True)
class ChannelList:
    channels: tuple[int, ...]


Param = ChannelList | int | float | str
Reply = str | bytes | None
Suffixes = Mapping[str, int]
Handler = Callable[[list[Param]], Reply | Awaitable[Reply]]
SuffixedHandler = Callable[[list[Param], Suffixes], Reply | Awaitable[Reply]]


def format_error(code: int, text: str) -> str:
    # IEEE 488.2 string data: a quote inside the string is doubled.
    escaped = text.replace('"', '""')
    return f'{code},"{escaped}"'


@dataclass
class _Node:
    children: list[tuple[str, str, _Node]] = field(default_factory=list)
    leaf: dict[bool, str] = field(default_factory=dict)  # is_query -> command key

    def child(self, token: str) -> _Node | None:
        upper = token.upper()
        for long_upper, short_upper, node in self.children:
            if upper in (long_upper, short_upper):
                return node
        return None


class CommandTree:
    """Header lookup built from a command table."""

    def __init__(self, table: Mapping[str, ScpiCommand]):
        self.table = dict(table)
        self.root = _Node()
        self.common: dict[str, str] = {}
        for key, command in table.items():
            if command.is_common:
                self.common[command.header.upper()] = key
                continue
            for path in command.paths():  # with and without each default node
                node = self.root
                for name in path:
                    found = node.child(name)
                    if found is None:
                        found = _Node()
                        node.children.append((name.upper(), short_form(name).upper(), found))
                    node = found
                if node.leaf.get(command.is_query, key) != key:
                    raise ValueError(f"{command.header} is also {node.leaf[command.is_query]!r}")
                node.leaf[command.is_query] = key

    def resolve(self, header: str, branch: list[str]) -> tuple[str, list[str]]:
        """The command key for ``header`` and the branch the next unit is relative to."""
        key, next_branch, _ = self.resolve_suffixed(header, branch)
        return key, next_branch

    def resolve_suffixed(self, header: str,
                         branch: list[str]) -> tuple[str, list[str], dict[str, int]]:
        """Like :meth:`resolve`, and the header's numeric suffixes by node (long form, capitals).

        The branch keeps the nodes as written, suffixes included, so that a
        relative header after ``:SENS2:CHAN1:POW:WAV 1.55E-6`` still means channel 2.
        """
        if header.startswith("*"):
            key = self.common.get(header.upper())
            if key is None:
                raise ScpiError(-113, header)
            return key, branch, {}
        is_query = header.endswith("?")
        body = header[:-1] if is_query else header
        if body.startswith(":"):
            path, body = [], body[1:]
        else:
            path = list(branch)
        tokens = body.split(":")
        if not all(tokens):
            raise ScpiError(-102, header)
        written = path + tokens
        node = self.root
        suffixes: dict[str, int] = {}
        for token in written:
            bare = re.sub(r"\d+$", "", token) or token  # numeric suffixes
            found = None
            for long_upper, short_upper, child in node.children:
                if bare.upper() in (long_upper, short_upper):
                    found = child
                    if bare != token:
                        suffixes[long_upper] = int(token[len(bare):])
                    break
            if found is None:
                raise ScpiError(-113, header)
            node = found
        key = node.leaf.get(is_query)
        if key is None:
            raise ScpiError(-113, header)
        return key, written[:-1], suffixes


MAX_CHANNELS = 4096  # far more ports than any instrument has; refuses (@1:999999999)

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_MNEMONIC = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_PLAIN_PORTS = re.compile(r" *[0-9]{1,18} *(?:, *[0-9]{1,18} *)*")
"""A channel list body of single ports, blanks around them; any other plain list is
looked at item by item (and its fault named)."""


_SPECIAL = re.compile(r"""([()"'])""")


def split_outside(text: str, separator: str) -> list[str]:
    """Split on ``separator`` where it is not inside parentheses or quotes. The text is
    taken a stretch between parentheses and quotes at a time (a whole-map command is a
    thousand characters and a few parentheses)."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for token in _SPECIAL.split(text):
        if quote:
            if token == quote:
                quote = ""
        elif token in ("\"", "'"):
            quote = token
        elif token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise ScpiError(-102, "unbalanced parenthesis")
        elif depth == 0 and separator in token:
            first, *more = token.split(separator)
            current.append(first)
            for piece in more:
                parts.append("".join(current))
                current = [piece]
            continue
        current.append(token)
    if quote or depth:
        raise ScpiError(-102, "unterminated list or string")
    parts.append("".join(current))
    return parts


def parse_channel_list(text: str) -> ChannelList:
    inner = text.strip()
    if not (inner.startswith("(@") and inner.endswith(")")):
        raise ScpiError(-104, f"expected a channel list, got {text.strip()!r}")
    body = inner[2:-1].strip()
    channels: list[int] = []
    if body and ":" not in body:  # a plain list of ports: split once, convert at once
        if _PLAIN_PORTS.fullmatch(body) and body.count(",") < MAX_CHANNELS:
            # the common list (a whole map's 128 ports): checked by one expression
            return ChannelList(tuple(map(int, body.split(","))))
        items = [item.strip() for item in body.split(",")]  # the fault named below
        for index, item in enumerate(items):
            if not _digits(item):
                raise ScpiError(-104, f"bad channel {item!r}")
            if index >= MAX_CHANNELS:
                raise ScpiError(-223, f"a channel list holds at most {MAX_CHANNELS} channels")
        return ChannelList(tuple(int(item) for item in items))
    if body:
        for item in body.split(","):
            first, sep, last = item.strip().partition(":")
            if not _digits(first.strip()) or (sep and not _digits(last.strip())):
                raise ScpiError(-104, f"bad channel {item.strip()!r}")
            start = int(first)
            stop = int(last) if sep else start
            if len(channels) + abs(stop - start) + 1 > MAX_CHANNELS:
                raise ScpiError(-223, f"a channel list holds at most {MAX_CHANNELS} channels")
            step = 1 if stop >= start else -1
            channels.extend(range(start, stop + step, step))
    return ChannelList(tuple(channels))


def parse_param(text: str) -> Param:
    token = text.strip()
    if not token:
        raise ScpiError(-109)
    if token.startswith("("):
        return parse_channel_list(token)
    if _NUMBER.match(token):
        number = float(token)
        return int(number) if number.is_integer() and re.match(r"^[+-]?\d+$", token) else number
    if token[0] in "\"'" and token[-1] == token[0] and len(token) >= 2:
        return token[1:-1]
    if _MNEMONIC.match(token):
        return token
    raise ScpiError(-102, f"bad parameter {token!r}")


def check_params(command: ScpiCommand, params: list[Param]) -> None:
    required = [p for p in command.params if not p.endswith("?")]
    if len(params) < len(required):
        raise ScpiError(-109, f"{command.short()} needs {len(required)} parameter"
                              f"{'' if len(required) == 1 else 's'}")
    if len(params) > len(command.params):
        raise ScpiError(-108, f"{command.short()} takes {len(command.params)} parameter"
                              f"{'' if len(command.params) == 1 else 's'}")
    for shape, value in zip(command.params, params, strict=False):
        kind = shape.rstrip("?")
        ok = {
            "chanlist": isinstance(value, ChannelList),
            "port": isinstance(value, int),
            "number": isinstance(value, int | float),
            "mnemonic": isinstance(value, str),
            "boolean": (isinstance(value, int) and value in (0, 1))
            or (isinstance(value, str) and value.upper() in ("ON", "OFF")),
            "value": isinstance(value, int | float | str),
        }[kind]
        if not ok:
            raise ScpiError(-104, f"{command.short()} expects a {kind}")


class ScpiInterpreter:
    """Executes one program message (one line) against a device's handlers."""

    def __init__(
        self,
        tree: CommandTree,
        handlers: Mapping[str, Handler],
        status: ClientStatus,
        *,
        messages: Mapping[int, str] = SCPI_ERRORS,
        suffixed_handlers: Mapping[str, SuffixedHandler] | None = None,
    ):
        suffixed = dict(suffixed_handlers or {})
        missing = set(tree.table) - set(handlers) - set(suffixed)
        if missing:
            raise ValueError(f"no handler for {sorted(missing)}")
        self.tree = tree
        self.handlers = dict(handlers)
        self.suffixed_handlers = suffixed
        self.status = status
        self.messages = messages

    @property
    def errors(self) -> ErrorQueue:
        """This client's error queue."""
        return self.status.errors

    def line_too_long(self) -> str | None:
        """A line too long to buffer is an error in the queue, not a reply."""
        self.status.report(-223, "Too much data")
        return None

    async def execute(self, line: str) -> str | bytes | None:
        """Run every unit of ``line``; the joined query replies, or ``None``."""
        replies: list[str | bytes] = []
        try:
            if "\n" in line or "\x7f" in line or not line.isascii():  # a byte above 126
                raise ScpiError(-101)
            message = normalise_white_space(line)
            if not message.strip():
                return None  # an empty program message is no command at all
            branch: list[str] = []
            indefinite = False  # an arbitrary ASCII response has been given
            for unit in split_outside(message, ";"):
                unit = unit.strip()
                if not unit:
                    raise ScpiError(-102, "empty command")
                header, *more = unit.split(maxsplit=1)
                rest = more[0] if more else ""
                key, branch, suffixes = self.tree.resolve_suffixed(header.strip(), branch)
                command = self.tree.table[key]
                if indefinite and command.is_query:
                    raise ScpiError(-440, f"{header} after an arbitrary ASCII response")
                params = [parse_param(p) for p in split_outside(rest, ",")] if rest.strip() else []
                check_params(command, params)
                self.status.message_available = bool(replies)
                suffixed = self.suffixed_handlers.get(key)
                reply = (suffixed(params, suffixes) if suffixed is not None
                         else self.handlers[key](params))
                if inspect.isawaitable(reply):
                    reply = await reply
                if reply is not None:
                    replies.append(reply)
                    indefinite = indefinite or key in INDEFINITE_RESPONSES
        except ScpiError as error:
            self.status.report(error.code, error.text)
        finally:
            self.status.message_available = False  # the response goes out at once
        if not replies:
            return None
        if any(isinstance(reply, bytes) for reply in replies):
            return b";".join(r if isinstance(r, bytes) else r.encode("ascii", "replace")
                             for r in replies)
        return ";".join(r for r in replies if isinstance(r, str))


_WHITE_SPACE = {code: " " for code in (*range(0x00, 0x0A), *range(0x0B, 0x21))}


def normalise_white_space(line: str) -> str:
    """Every IEEE 488.2 white-space byte (0x00-0x09, 0x0B-0x20) outside a quoted string
    becomes a space, so the parser splits on one kind of white space."""
    parts = re.split(r"(\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*')", line)
    return "".join(part if index % 2 else part.translate(_WHITE_SPACE)
                   for index, part in enumerate(parts))
