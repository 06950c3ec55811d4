"""``msoctl switch plan``: the wanted configuration derived from the links."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
import yaml

from drivers.errors import ValidationError
from msoctl.ops.switch_plan import PortLink, derive, parse_size
from tests.support import in_process
from tests.support.yang import NAMESPACE, Libyang


def _xml(parent: ET.Element, name: str, value: Any) -> None:
    if isinstance(value, dict):
        child = ET.SubElement(parent, name)
        for key, item in value.items():
            _xml(child, key, item)
    elif isinstance(value, list):
        for item in value:
            _xml(parent, name, item)
    else:
        ET.SubElement(parent, name).text = str(value).lower() if isinstance(value, bool) \
            else str(value)


def as_xml(config: dict[str, Any]) -> str:
    root = ET.Element("switch", xmlns=NAMESPACE)
    for key, value in config["switch"].items():
        _xml(root, key, value)
    return ET.tostring(root, encoding="unicode")


def test_a_30km_port_gets_the_reference_headroom() -> None:
    plan = derive([PortLink.parse("Ethernet1=30km@400G")])
    (port,) = plan.config["switch"]["ports"]["port"]
    assert port["pfc"]["xoff-bytes"] == pytest.approx(24e6, rel=0.02)
    assert port["cable-length-meters"] == 30_000
    (queue,) = port["queues"]["queue"]
    assert queue["queue-id"] == 3 and queue["fast-cnp"] == {"enabled": True}
    assert queue["wred"]["min-threshold"] < queue["wred"]["max-threshold"]


def test_the_plan_validates_against_the_yang_module(libyang_context: Libyang) -> None:
    plan = derive([PortLink.parse("Ethernet1=30km@400G"), PortLink.parse("Ethernet2=2km@100G")],
                  lossless_priorities=(3, 4))
    assert libyang_context.validate(as_xml(plan.config)) == []


def test_a_plan_the_pool_cannot_hold_is_refused_with_the_numbers() -> None:
    links = [PortLink.parse(f"Ethernet{n}=30km@400G") for n in (1, 2)]
    with pytest.raises(ValidationError) as caught:
        derive(links, lossless_priorities=(3, 4), lossless_pool_bytes=parse_size("64MB"))
    message = str(caught.value)
    assert "95.16 MB" in message and "64.00 MB" in message and "2 lossless priorities" in message
    assert derive(links, lossless_pool_bytes=parse_size("64MB")).headroom_needed_bytes < 64e6


@pytest.mark.parametrize("kwargs, message", [
    ({"lossless_priorities": (6,)}, "CNP priority 6"),
    ({"lossless_priorities": (9,)}, "0..7"),
])
def test_inconsistent_plans_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        derive([PortLink.parse("e1=1km@400G")], **kwargs)


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    msoctl = in_process(capsys)
    result = msoctl("switch", "plan", "--port", "Ethernet1=30km@400G", "--lossless-pool", "64MB")
    assert result.code == 0, result.err
    config = yaml.safe_load(result.out)
    assert list(config["congestion_control"]["ports"]) == ["Ethernet1"]
    document = json.loads(msoctl("switch", "plan", "--port", "e1=30km@400G", "-o", "json").out)
    assert document["headroom_needed_bytes"] == document["ports"]["e1"]["xoff_bytes"]
    for args in (["--port", "e1=30km"], ["--port", "e1=30km@400G", "--lossless", "x"],
                 ["--port", "e1=30km@400G", "--port", "e2=30km@400G", "--lossless", "3,4",
                  "--lossless-pool", "32MB"]):
        bad = msoctl("switch", "plan", *args)
        assert bad.code == 2 and bad.err.startswith("error: "), bad.err
