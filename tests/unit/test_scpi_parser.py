"""The instrument-side SCPI parser and interpreter (emulators/scpi/parser.py).

Run through the real OCS interpreter (emulators/ocs/scpi.py) on a stepped clock,
so what is tested is what the lab serves.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import pytest

from drivers.ocs.commands import COMMANDS
from drivers.scpi.session import parse_error_queue
from emulators.clock import SteppedClock
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.parser import (
    ChannelList,
    CommandTree,
    ErrorQueue,
    ScpiError,
    ScpiInterpreter,
    format_error,
    parse_channel_list,
    parse_param,
    split_outside,
)
from emulators.scpi.status import ClientStatus

# IEEE 488.2 string response data: a quoted string, embedded quotes doubled.
_ERROR_REPLY = re.compile(r'[+-]?\d+,"(?:[^"]|"")*"')


class Ocs:
    """An emulated 64x64 OCS and a way to talk SCPI to it."""

    def __init__(self) -> None:
        self.device = OcsDevice("ocs-p", OpticalModel(SteppedClock()), serial="PARSER-1")
        self.interpreter = make_interpreter(self.device)

    def send(self, line: str) -> str | None:
        return asyncio.run(self.interpreter.execute(line))

    def error_codes(self) -> list[int]:
        """Drain the error queue through SCPI; the codes, oldest first."""
        codes = []
        while True:
            reply = self.send(":SYST:ERR?")
            assert reply is not None and _ERROR_REPLY.fullmatch(reply), reply
            code = int(reply.split(",", 1)[0])
            if code == 0:
                return codes
            codes.append(code)


@pytest.fixture
def ocs() -> Ocs:
    return Ocs()


# ---- undefined headers -------------------------------------------------------------


@pytest.mark.parametrize("line", [
    ":OXC:NOPE",
    ":OXC:SWIT:CONN:ADDX (@1),(@65)",
    "*XYZ?",
    ":OXC:SWIT:SIZE",  # only the query exists
    "SWIT:SIZE?",  # relative, at the root: no such node
    ":SYST?:ERR",
])
def test_undefined_header_is_queued_and_the_parser_keeps_serving(ocs: Ocs, line: str) -> None:
    assert ocs.send(line) is None
    assert ocs.send(":OXC:SWIT:SIZE?") == "64,64"
    assert ocs.error_codes() == [-113]


def test_undefined_header_reply_names_the_header(ocs: Ocs) -> None:
    ocs.send(":OXC:BOGUS")
    reply = ocs.send(":SYST:ERR?")
    assert reply is not None
    assert reply.startswith('-113,"Undefined header')
    assert ":OXC:BOGUS" in reply


# ---- parameters ------------------------------------------------------------------


@pytest.mark.parametrize(("line", "code"), [
    (":OXC:SWIT:CONN:PORT?", -109),  # missing
    (":OXC:SWIT:CONN:ADD (@1)", -109),  # one of two lists
    (":OXC:SWIT:PORT:STAT?", -109),
    (":OXC:SWIT:CONN:PORT? 1,2", -108),  # one too many
    (":OXC:SWIT:SIZE? 1", -108),
    (":OXC:SWIT:CONN:ADD (@1),(@65),(@2)", -108),
    (":OXC:SWIT:CONN:PORT? (@1)", -104),  # a list where a number belongs
    (":OXC:SWIT:CONN:PORT? 1.5", -104),
    (":OXC:SWIT:PORT:STAT? 5", -104),  # a number where a list belongs
    (":OXC:SWIT:PORT:STAT? (1,2)", -104),  # a list without '@'
    (":OXC:SWIT:PORT:STAT? (@1,x)", -104),
    (":OXC:SWIT:PORT:STAT? (@1,,2)", -104),
    (":OXC:SWIT:PORT:STAT? (@-1)", -104),
    (":OXC:SWIT:PORT:STAT? (@1:)", -104),
    (":OXC:BOOT:MODE (@1)", -104),
    (":OXC:BOOT:MODE 5", -104),
])
def test_malformed_parameters(ocs: Ocs, line: str, code: int) -> None:
    assert ocs.send(line) is None
    assert ocs.error_codes() == [code]
    assert ocs.device.connection_map() == {}


@pytest.mark.parametrize("line", [
    ":OXC:SWIT:PORT:STAT? (@1,2",
    ":OXC:SWIT:PORT:STAT? (@1,2))",
    ":OXC:SWIT:CONN:ADD (@1),((@65)",
    ':OXC:BOOT:MODE "DARK',  # unterminated string
    ";*IDN?",  # an empty message unit
    ":OXC::SWIT:SIZE?",
])
def test_syntax_errors(ocs: Ocs, line: str) -> None:
    assert ocs.send(line) is None
    assert ocs.error_codes() == [-102]


@pytest.mark.parametrize("line", [
    ":OXC:SWIT:SIZE?\u00e9",
    ":OXC:SWIT:CONN:ADD (@1),(@65)\x7f",
    "*IDN?\u2028",
])
def test_invalid_characters(ocs: Ocs, line: str) -> None:
    """IEEE 488.2 ch. 7: program messages are 7-bit ASCII; DEL and anything above it is
    an invalid character (SCPI-99 vol. 2 §21.8: -101)."""
    assert ocs.send(line) is None
    assert ocs.error_codes() == [-101]
    assert ocs.device.connection_map() == {}


def test_a_tab_separates_header_and_parameters(ocs: Ocs) -> None:
    """IEEE 488.2 §7.4.1.2: the header separator is white space, which includes HT."""
    assert ocs.send(":OXC:SWIT:CONN:ADD\t(@1),(@65)") is None
    assert ocs.send(":OXC:SWIT:CONN:PORT?\t1") == '"65"'
    assert ocs.error_codes() == []


@pytest.mark.parametrize("byte", [*range(0x00, 0x0A), *range(0x0B, 0x21)])
def test_every_white_space_byte_is_white_space(ocs: Ocs, byte: int) -> None:
    """IEEE 488.2 §7.4.1.2: <white space> is any byte 0x00-0x09 or 0x0B-0x20, wherever
    white space may stand: around the header separator, parameters and units."""
    space = chr(byte)
    assert ocs.send(f"{space}:OXC:SWIT:CONN:ADD{space}(@1){space},{space}(@65){space}") is None
    assert ocs.send(f":OXC:SWIT:CONN:PORT?{space}{space}1{space};{space}*OPC?") == '"65";1'
    assert ocs.error_codes() == []
    assert ocs.device.connection_map() == {1: 65}


def test_an_empty_message_is_no_command(ocs: Ocs) -> None:
    """IEEE 488.2 §7.3 (program message syntax): a terminator alone is an empty program
    message, which does nothing and is no error."""
    assert ocs.send("") is None
    assert ocs.send(" \t\r") is None
    assert ocs.error_codes() == []


def test_a_huge_channel_range_is_refused_before_it_is_expanded(ocs: Ocs) -> None:
    # One typo must not make the emulator build a list of millions of ports.
    assert ocs.send(":OXC:SWIT:PORT:STAT? (@1:2000000)") is None
    assert ocs.error_codes() == [-223]
    assert ocs.send(":OXC:SWIT:PORT:STAT? (@1:128)") is not None
    assert ocs.error_codes() == []


# ---- the pieces of the parser ---------------------------------------------------------


@pytest.mark.parametrize(("text", "channels"), [
    ("(@)", ()),
    ("(@5)", (5,)),
    ("(@1,2,3)", (1, 2, 3)),
    ("(@1:4)", (1, 2, 3, 4)),
    ("(@4:1)", (4, 3, 2, 1)),
    ("(@1,3:5,9)", (1, 3, 4, 5, 9)),
    ("(@ 1 , 2 )", (1, 2)),
    ("(@7:7)", (7,)),
])
def test_channel_lists(text: str, channels: tuple[int, ...]) -> None:
    assert parse_channel_list(text) == ChannelList(channels)


@pytest.mark.parametrize(("text", "value"), [
    ("42", 42),
    ("+42", 42),
    ("-7", -7),
    ("1.5", 1.5),
    ("1.", 1.0),
    (".5", 0.5),
    ("2E3", 2000.0),
    ("DARK", "DARK"),
    ("rest", "rest"),
    ('"a b"', "a b"),
    ("'x'", "x"),
])
def test_parameter_values(text: str, value: object) -> None:
    parsed = parse_param(text)
    assert parsed == value
    assert type(parsed) is type(value)


def test_split_outside_keeps_lists_and_strings_whole() -> None:
    assert split_outside('(@1,2),(@3),"a,b"', ",") == ["(@1,2)", "(@3)", '"a,b"']
    assert split_outside(':A (@1;2);"x;y";:B', ";") == [':A (@1;2)', '"x;y"', ":B"]
    with pytest.raises(ScpiError) as caught:
        split_outside("(@1", ",")
    assert caught.value.code == -102


def test_interpreter_refuses_a_table_without_every_handler() -> None:
    with pytest.raises(ValueError, match="no handler"):
        ScpiInterpreter(CommandTree(COMMANDS), {}, ClientStatus(SteppedClock()))


def test_a_default_node_may_be_written_or_left_out() -> None:
    """SCPI-99 vol. 1 ch. 6: a node in brackets is a default node, optional on the wire."""
    tree = CommandTree(COMMANDS)
    for spelling in (":SYST:ERR?", ":SYST:ERR:NEXT?", ":system:error:next?", ":SYSTEM:ERROR?"):
        assert tree.resolve(spelling, [])[0] == "error"
    assert tree.resolve(":STAT:OPER?", [])[0] == "operation_event"
    assert tree.resolve(":STAT:OPER:EVEN?", [])[0] == "operation_event"
    assert tree.resolve(":SYST:ERR:ALL?", [])[0] == "errors_all"


# ---- the error queue ----------------------------------------------------------------


def test_error_queue_is_fifo(ocs: Ocs) -> None:
    ocs.send(":OXC:NOPE")  # -113
    ocs.send(":OXC:SWIT:CONN:PORT? 1,2")  # -108
    ocs.send(":OXC:SWIT:CONN:PORT?")  # -109
    ocs.send(":OXC:SWIT:PORT:STAT? (@1")  # -102
    ocs.send(":OXC:SWIT:CONN:PORT? 999")  # -222, from the device
    assert ocs.error_codes() == [-113, -108, -109, -102, -222]
    assert ocs.send(":SYST:ERR?") == '0,"No error"'


def test_error_queue_overflow_puts_350_in_the_last_slot(ocs: Ocs) -> None:
    size = ocs.interpreter.errors.size
    for port in range(1, size + 6):  # five more errors than fit
        ocs.send(f":OXC:SWIT:CONN:PORT? {1000 + port}")  # -222 each
    ocs.send(":OXC:NOPE")  # -113, lost: the queue is full
    assert len(ocs.interpreter.errors) == size
    codes = ocs.error_codes()
    assert codes == [-222] * (size - 1) + [-350]
    # The ones kept are the oldest, in order.
    for port in range(1, size):
        ocs.send(f":OXC:SWIT:CONN:PORT? {1000 + port}")
    first = ocs.send(":SYST:ERR?")
    assert first is not None and "1001" in first


def test_error_queue_overflow_on_its_own() -> None:
    queue = ErrorQueue(size=3)
    for code in (-101, -102, -103, -104):
        queue.push(code, "x")
    assert [queue.pop()[0] for _ in range(4)] == [-101, -102, -350, 0]
    assert queue.drain() == [(0, "No error")]


def test_system_error_all_drains_in_order(ocs: Ocs) -> None:
    ocs.send(":OXC:NOPE")
    ocs.send(":OXC:SWIT:CONN:PORT?")
    reply = ocs.send(":SYST:ERR:ALL?")
    assert reply is not None
    assert [code for code, _ in parse_error_queue(reply)] == [-113, -109]
    assert ocs.send(":SYST:ERR:ALL?") == '0,"No error"'


def test_error_replies_are_valid_strings_even_when_the_detail_has_quotes(ocs: Ocs) -> None:
    ocs.send(":OXC:SWIT:PORT:STAT? ('a')")  # the detail quotes the offending text
    ocs.send(':OXC:BAD"x"')
    first, second = ocs.send(":SYST:ERR?"), ocs.send(":SYST:ERR?")
    for reply in (first, second):
        assert reply is not None and _ERROR_REPLY.fullmatch(reply), reply
    assert parse_error_queue(f"{first},{second}")[1][1].endswith(':OXC:BAD"x"')


def test_format_error_doubles_embedded_quotes() -> None:
    assert format_error(0, "No error") == '0,"No error"'
    assert format_error(-113, 'Undefined header; :A"B') == '-113,"Undefined header; :A""B"'


# ---- compound messages ------------------------------------------------------------------


def test_an_error_discards_the_rest_of_a_compound_message(ocs: Ocs) -> None:
    reply = ocs.send(
        ":OXC:SWIT:CONN:ADD (@1),(@65);:OXC:NOPE;:OXC:SWIT:CONN:ADD (@2),(@66);:SYST:ERR?"
    )
    assert reply is None
    assert ocs.device.connection_map() == {1: 65}
    assert ocs.error_codes() == [-113]


def test_a_device_error_also_discards_the_rest(ocs: Ocs) -> None:
    ocs.send(":OXC:SWIT:CONN:ADD (@1),(@65)")
    ocs.send(":OXC:SWIT:CONN:ADD (@2),(@65);:OXC:SWIT:CONN:ADD (@3),(@67)")
    assert ocs.device.connection_map() == {1: 65}
    assert ocs.error_codes() == [202]


def test_the_next_message_starts_at_the_root_again(ocs: Ocs) -> None:
    assert ocs.send(":OXC:SWIT:CONN:STAT?") == "(@),(@)"
    assert ocs.send("STAT?") is None  # a new message: relative to the root
    assert ocs.error_codes() == [-113]


def test_relative_headers_follow_the_last_command_not_the_last_common_one(ocs: Ocs) -> None:
    assert ocs.send(":OXC:SWIT:PORT:DIS (@3);*OPC?;STAT? (@2,3)") == "1;(E,D)"
    assert ocs.send(":OXC:SWIT:PORT:STAT? (@3)") == "(D)"
    reply = ocs.send(":SYST:ERR?;:OXC:SWIT:SIZE?;CONN:ADD (@1),(@65);STAT?")
    assert reply == '0,"No error";64,64;(@1),(@65)'


def test_a_query_after_idn_in_one_message_is_a_query_error(ocs: Ocs) -> None:
    """IEEE 488.2 §6.5.7.5.7 and §8.7.11: *IDN? answers arbitrary ASCII response data,
    which must end the response message; a query after it in the same program message
    is a query error (-440) and is not answered. Commands after it still run."""
    reply = ocs.send("*IDN?;:OXC:SWIT:SIZE?")
    assert reply is not None and reply.startswith("MegaScaleOut,") and ";" not in reply
    assert ocs.error_codes() == [-440]
    assert ocs.send(":OXC:SWIT:SIZE?;*IDN?") is not None  # last is fine
    assert ocs.send("*IDN?;:OXC:SWIT:PORT:DIS (@4)") is not None
    assert ocs.device.port_state(4) == "D"
    assert ocs.error_codes() == []


def test_splitting_and_channel_lists_follow_their_rules_on_random_text() -> None:
    """split_outside splits at a separator outside parentheses and quotes (an unbalanced
    parenthesis or an open quote is -102), and a channel list of plain ports is what the
    rule for ranges gives too: random text of the characters that matter, against the
    rules written out here one character at a time."""
    import random

    def rule(text: str, separator: str) -> list[str] | int:
        parts, current, depth, quote = [], "", 0, ""
        for ch in text:
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "\"'":
                quote = ch
            elif ch in "()":
                depth += 1 if ch == "(" else -1
                if depth < 0:
                    return -102
            elif ch == separator and depth == 0:
                parts.append(current)
                current = ""
                continue
            current += ch
        return -102 if quote or depth else [*parts, current]

    def outcome(call: Callable[..., object], *args: object) -> object:
        try:
            return call(*args)
        except ScpiError as error:
            return error.code

    rng = random.Random(8)
    for _ in range(3000):
        text = "".join(rng.choice("(),;a1 :\"'") for _ in range(rng.randint(0, 14)))
        for separator in ",;":
            assert outcome(split_outside, text, separator) == rule(text, separator), \
                (text, separator)
    for _ in range(500):
        ports = [rng.randint(1, 300) for _ in range(rng.randint(1, 40))]
        plain = "(@" + ",".join(f" {p}" if rng.random() < 0.1 else str(p) for p in ports) + ")"
        ranged = "(@" + ",".join(f"{p}:{p}" for p in ports) + ")"
        assert parse_channel_list(plain).channels == tuple(ports) == \
            parse_channel_list(ranged).channels
    for bad in ("(@1,,2)", "(@1,x)", "(@1,²)", "(@" + ",".join(["1"] * 4097) + ")"):
        assert outcome(parse_channel_list, bad) in (-104, -223), bad
    assert outcome(parse_channel_list, "(@" + ",".join(["1"] * 4097) + ")") == -223
