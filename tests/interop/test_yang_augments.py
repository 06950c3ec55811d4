"""yang/msoctl-qos-augments.yang, the project's augments of OpenConfig QoS, checked by
third parties.

No Debian or PyPI package ships OpenConfig's YANG texts, so pyang cannot resolve the
module's imports here. What can be checked is checked:

- pyang ``--strict`` finds nothing wrong with the module but the three OpenConfig
  modules it cannot find (a copy with an error of its own is caught, so the check can
  fail);
- every augment's target exists in OpenConfig QoS as Google's oc-config-validate
  compiled it (its pyangbind bindings of openconfig-qos), and none of the nodes the
  module adds is already a node of OpenConfig's there.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT
from tests.support.peers import require_module

MODULE = ROOT / "yang" / "msoctl-qos-augments.yang"
IMPORTS = {"openconfig-qos", "openconfig-yang-types", "openconfig-inet-types"}


def _pyang(path: Path) -> list[str]:
    pyang = Path(sys.executable).with_name("pyang")
    done = subprocess.run([str(pyang), "--strict", "--print-error-code", str(path)],
                          capture_output=True, text=True, timeout=60)
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def test_pyang_finds_nothing_but_the_openconfig_modules_it_lacks(tmp_path: Path) -> None:
    found = _pyang(MODULE)
    assert found and all(line.endswith("error: MODULE_NOT_FOUND") for line in found), found
    lines = MODULE.read_text().splitlines()
    imported = {lines[int(line.split(":")[1]) - 1].split()[1] for line in found}
    assert imported == IMPORTS
    broken = tmp_path / MODULE.name
    broken.write_text(MODULE.read_text().replace("leaf xon-bytes {", "leaf xon-bytes {\n"
                                                 "      units;", 1))
    assert any("MODULE_NOT_FOUND" not in line for line in _pyang(broken))


def _targets() -> list[tuple[str, list[str]]]:
    """Each augment's target path and the names of the nodes it adds."""
    text = MODULE.read_text()
    found = []
    for match in re.finditer(r'augment ((?:"[^"]*"\s*\+?\s*)+)\{', text):
        target = "".join(re.findall(r'"([^"]*)"', match.group(1)))
        body, depth, index = [], 1, match.end()
        while depth:
            character = text[index]
            depth += {"{": 1, "}": -1}.get(character, 0)
            body.append(character)
            index += 1
        top = re.findall(r"^    (?:container|leaf|leaf-list|list) ([\w-]+)", "".join(body),
                         re.MULTILINE)
        found.append((target, top))
    return found


def _walk(binding: Any, target: str) -> Any:
    node = binding
    for step in target.strip("/").split("/"):
        name = step.split(":", 1)[1].replace("-", "_")
        node = getattr(node, name)
        if hasattr(node, "add") and hasattr(node, "_keyval"):  # a list: into one entry
            node = node.add("x")
    return node


def test_every_augment_target_is_openconfigs_and_adds_nothing_it_has() -> None:
    qos = require_module("oc_config_validate.models.qos",
                         how_to_install="pip install oc-config-validate (make test does)")
    targets = _targets()
    assert len(targets) == 4
    for target, added in targets:
        node = _walk(qos.openconfig_qos(), target)
        assert added, target
        for name in added:
            assert not hasattr(node, name.replace("-", "_")), f"{target}: {name} exists"
    with pytest.raises(AttributeError):
        _walk(qos.openconfig_qos(), "/oc-qos:qos/oc-qos:no-such-container")
