"""The OCS map the driver hands out and takes (drivers/ocs/types.py, ``PortMap``): a map
that exists is one the switch can hold, and it reads like the dict it wraps."""

from __future__ import annotations

import pytest

from drivers.errors import ValidationError
from drivers.ocs.types import PortMap


def test_a_map_is_kept_in_ingress_order_and_its_views_are_the_maps() -> None:
    found = PortMap({3: 11, 1: 16, 2: 9}, 8)
    assert list(found) == [1, 2, 3]
    assert list(found.keys()) == [1, 2, 3]
    assert list(found.values()) == [16, 9, 11]
    assert list(found.items()) == [(1, 16), (2, 9), (3, 11)]
    assert found == {1: 16, 2: 9, 3: 11} and found == PortMap([(2, 9), (1, 16), (3, 11)], 8)
    assert len(PortMap({}, 8)) == 0 and len(PortMap([], 8)) == 0


@pytest.mark.parametrize(("pairs", "fault"), [
    ({0: 9}, "ingress port 0 is out of range 1..8"),
    ({9: 10}, "ingress port 9 is out of range 1..8"),
    ({1: 8}, "egress port 8 is out of range 9..16"),
    ({1: 17}, "egress port 17 is out of range 9..16"),
    ({1: 9, 2: 9}, "egress port 9 is fed by both 1 and 2"),
    ([(1, 9), (1, 10)], "ingress port 1 is sent to both 9 and 10"),
])
def test_a_map_the_switch_cannot_hold_is_refused_with_its_first_fault(
        pairs: object, fault: str) -> None:
    with pytest.raises(ValidationError) as refused:
        PortMap(pairs, 8)  # type: ignore[arg-type]
    assert refused.value.message == fault


def test_a_pair_listed_twice_is_one_connection() -> None:
    assert PortMap([(1, 9), (2, 10), (1, 9)], 8) == {1: 9, 2: 10}
