"""gNMI path strings (drivers/transports/gnmi_path.py): parse and format, escapes, bad
strings, and the round trip both ways (hypothesis for any names and keys)."""

from __future__ import annotations

import pytest
from gnmi_pb import gnmi_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.errors import ValidationError
from drivers.transports.gnmi_path import format_path, parse_path


def elems(path: gnmi_pb2.Path) -> list[tuple[str, dict[str, str]]]:
    return [(elem.name, dict(elem.key)) for elem in path.elem]


def test_an_openconfig_path_with_a_module_prefix_and_a_key() -> None:
    path = parse_path("/openconfig-qos:qos/queues/queue[name=Q3]/config")
    assert elems(path) == [("openconfig-qos:qos", {}), ("queues", {}),
                           ("queue", {"name": "Q3"}), ("config", {})]
    assert not path.element and not path.origin and not path.target


def test_several_keys_and_no_leading_slash() -> None:
    path = parse_path("network-instances/network-instance[name=default]/protocols/"
                      "protocol[identifier=BGP][name=bgp]")
    assert elems(path)[-1] == ("protocol", {"identifier": "BGP", "name": "bgp"})
    assert format_path(path) == ("/network-instances/network-instance[name=default]/"
                                 "protocols/protocol[identifier=BGP][name=bgp]")


@pytest.mark.parametrize(("text", "value"), [
    ("/a/b[k=Ethernet1/1]/c", "Ethernet1/1"),  # '/' as it is
    ("/a/b[k=Ethernet1\\/1]/c", "Ethernet1/1"),  # or escaped
    ("/a/b[k=x\\]y]/c", "x]y"),
    ("/a/b[k=back\\\\slash]/c", "back\\slash"),
    ("/a/b[k=p=q]/c", "p=q"),
    ("/a/b[k=[x]/c", "[x"),
    ("/a/b[k=]/c", ""),
])
def test_key_values_with_escapes(text: str, value: str) -> None:
    assert elems(parse_path(text))[1] == ("b", {"k": value})


def test_format_escapes_only_what_must_be() -> None:
    path = gnmi_pb2.Path(elem=[
        gnmi_pb2.PathElem(name="interfaces"),
        gnmi_pb2.PathElem(name="interface", key={"name": "Ethernet1/1", "x": "a]b\\c=d"}),
        gnmi_pb2.PathElem(name="odd/name[0]"),
    ])
    text = format_path(path)
    assert text == ("/interfaces/interface[name=Ethernet1/1][x=a\\]b\\\\c=d]"
                    "/odd\\/name\\[0\\]")
    assert parse_path(text) == path


@pytest.mark.parametrize("text", ["/", ""])
def test_the_root(text: str) -> None:
    assert parse_path(text) == gnmi_pb2.Path()
    assert format_path(gnmi_pb2.Path()) == "/"


@pytest.mark.parametrize("text", [
    "/openconfig-qos:qos/queues/queue[name=Q3]/config",
    "/a[k=1][l=2]/b[m=x\\]]",
    "/interfaces/interface[name=Ethernet1/1]/state/counters",
    "/a/*/c[name=*]/...",
])
def test_canonical_strings_round_trip(text: str) -> None:
    assert format_path(parse_path(text)) == text


def test_keys_come_back_sorted() -> None:
    assert format_path(parse_path("/a[z=1][b=2]")) == "/a[b=2][z=1]"


def test_the_deprecated_element_is_read_when_there_is_no_elem() -> None:
    assert format_path(gnmi_pb2.Path(element=["interfaces", "interface"])) == \
        "/interfaces/interface"


@pytest.mark.parametrize(("text", "reason"), [
    ("/a//b", "empty element"),
    ("/a/", "trailing '/'"),
    ("//", "empty element"),
    ("[k=v]", "empty element"),
    ("/a[k=v", "unbalanced '['"),
    ("/a[k=v]]", "a '/' should follow"),
    ("/a]b", "unbalanced ']'"),
    ("/a[k[x=v]", "unbalanced '['"),
    ("/a[k]/b", "key without '='"),
    ("/a[k", "key without '='"),
    ("/a[=v]", "empty key name"),
    ("/a[k=1][k=2]", "given twice"),
    ("/a[k=v]b", "a '/' should follow"),
    ("/a\\", "lone backslash"),
    ("/a[k=v\\]", "unbalanced '['"),
])
def test_bad_strings(text: str, reason: str) -> None:
    with pytest.raises(ValidationError, match="bad gNMI path") as raised:
        parse_path(text)
    assert reason in str(raised.value)
    assert repr(text) in str(raised.value)


def test_a_lone_surrogate_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        parse_path("/a[k=\ud800]")


NAMES = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
PATHS = st.lists(st.tuples(NAMES, st.dictionaries(
    NAMES, st.text(st.characters(exclude_categories=("Cs",)), max_size=8), max_size=3)),
    max_size=5)


@settings(max_examples=150, deadline=None)
@given(PATHS)
def test_any_path_of_names_and_keys_round_trips(found: list[tuple[str, dict[str, str]]]) -> None:
    path = gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=name, key=keys) for name, keys in found])
    text = format_path(path)
    assert parse_path(text) == path
    assert format_path(parse_path(text)) == text
