"""oc-config-validate's own gNMI test runner, run against a switch in its own process.

:func:`start` writes the runner's tests file (its ``!TestContext`` YAML: a ``!Target``
with no cool-down after a Set, and one ``!TestCase`` per :class:`Case`) and starts
``python -m tests.support.oc_runner``, which is the runner's ``__main__`` (the same
arguments: ``-tgt``, ``-user``, ``-pass``, ``--no_tls``, ``-tests``, ``-results``) with
one addition, below; :meth:`RunnerProcess.wait` gives its results file, read.

The runner checks every reply against its pyangbind bindings of OpenConfig. A switch
that announces msoctl-qos-augments puts that module's leaves into OpenConfig's own
containers (the PFC pause counters in an output queue's ``state``), which the bindings
do not have: pyangbind refuses a member it does not know, whatever its module. So before
the runner starts, :func:`graft_augment_leaves` gives the bindings the leaves of each
augment of yang/msoctl-qos-augments.yang that adds only leaves to an OpenConfig
container, typed as the module types them (read with pyang's parser). OpenConfig's
own members are still checked by Google's bindings alone; the augments' containers
(fast-cnp, headroom, pfc) are not grafted, so a reply carrying one still fails.

The runner carries its own copy of the gNMI stubs, which cannot share a process with
gnmi-pb's: nothing of it is imported here outside the runner's process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AUGMENTS_MODULE = ROOT / "yang" / "msoctl-qos-augments.yang"
AUGMENTS_NAMESPACE = "urn:megascaleout:yang:msoctl-qos-augments"
BINDINGS = "oc_config_validate.models.qos"
"""The bindings the augments' targets live in (openconfig-qos)."""
RANGES = {"oc-yang:counter64": (64, "0..18446744073709551615")}
"""The YANG types of grafted leaves: the integer size and range pyangbind restricts to."""


@dataclass(frozen=True)
class Case:
    """One ``!TestCase`` of the runner: a class of ``oc_config_validate.testcases`` and
    its arguments."""

    name: str
    class_name: str
    args: dict[str, Any] = field(default_factory=dict)


def tests_file(cases: Sequence[Case], description: str) -> str:
    """The runner's tests file (YAML; each case a JSON flow mapping under its tag)."""
    lines = ["!TestContext", f"description: {json.dumps(description)}",
             "target: !Target", "  gnmi_set_cooldown_secs: 0", "tests:"]
    lines += [f"- !TestCase {json.dumps(case.__dict__)}" for case in cases]
    return "\n".join(lines) + "\n"


@dataclass
class RunnerProcess:
    """A runner started by :func:`start`."""

    process: subprocess.Popen[str]
    results: Path
    timeout_seconds: float

    def wait(self) -> dict[str, Any]:
        """The results file, read; AssertionError when the runner ended in error."""
        try:
            out, _ = self.process.communicate(timeout=self.timeout_seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
            raise AssertionError(f"the runner took over {self.timeout_seconds} s:\n"
                                 f"{out[-3000:]}") from None
        assert self.process.returncode == 0, out[-3000:]
        found: dict[str, Any] = json.loads(self.results.read_text(encoding="utf-8"))
        found["output"] = out
        return found

    def stop(self) -> None:
        """End the runner if it still runs (a test that gave up on it)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def start(address: str, cases: Sequence[Case], directory: Path, *, username: str,
          password: str, timeout_seconds: float = 60) -> RunnerProcess:
    """Start the runner on ``cases`` against the plaintext gNMI target ``address``
    (``host:port``); its files in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    tests = directory / "tests.yaml"
    tests.write_text(tests_file(cases, f"msoctl interop against {address}"), encoding="utf-8")
    results = directory / "results.json"
    command = [sys.executable, "-m", "tests.support.oc_runner", "-tgt", address,
               "-user", username, "-pass", password, "--no_tls", "-tests", str(tests),
               "-results", str(results)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    return RunnerProcess(process, results, timeout_seconds)


# ---- in the runner's process --------------------------------------------------------

@dataclass(frozen=True)
class AugmentLeaf:
    """A leaf an augment adds to an OpenConfig container."""

    target: str
    """The container's schema path without prefixes: ``qos/interfaces/.../state``."""
    name: str
    yang_type: str


def augment_leaves(module_file: Path = AUGMENTS_MODULE) -> list[AugmentLeaf]:
    """The leaves of the module's augments that add only leaves (pyang's parser; the
    OpenConfig modules it imports are not needed to read it)."""
    from pyang import context, repository

    ctx = context.Context(repository.FileRepository(str(module_file.parent), use_env=False))
    module = ctx.add_module(module_file.name, module_file.read_text(encoding="utf-8"))
    if module is None:
        raise ValueError(f"pyang cannot read {module_file}")
    found = []
    for augment in module.search("augment"):
        children = [child for child in augment.substmts if child.keyword != "description"]
        if not children or any(child.keyword != "leaf" for child in children):
            continue
        target = "/".join(part.split(":")[-1] for part in augment.arg.strip("/").split("/"))
        found += [AugmentLeaf(target, leaf.arg, leaf.search_one("type").arg)
                  for leaf in children]
    return found


def _class_name(target: str) -> str:
    """pyangbind's name for the class of the openconfig-qos container at ``target``."""
    parts = target.replace("-", "_").split("/")
    return f"yc_{parts[-1]}_openconfig_qos__{'_'.join(parts)}"


def graft_augment_leaves(leaves: Sequence[AugmentLeaf]) -> None:
    """Replace each target container's class in the bindings by a subclass that also has
    the augment's leaves (the generated parents build their children from the module's
    names, so the subclass is what they build)."""
    import importlib

    bindings = importlib.import_module(BINDINGS)
    targets: dict[str, list[AugmentLeaf]] = {}
    for leaf in leaves:
        targets.setdefault(leaf.target, []).append(leaf)
    for target, added in targets.items():
        name = _class_name(target)
        setattr(bindings, name, _with_leaves(getattr(bindings, name), added))


def _with_leaves(base: type, leaves: Sequence[AugmentLeaf]) -> type:
    from pyangbind.lib.yangtypes import RestrictedClassType, YANGDynClass, safe_name

    def builder(leaf: AugmentLeaf) -> Callable[..., Any]:
        if leaf.yang_type not in RANGES:
            raise ValueError(f"{leaf.name}: no binding type for {leaf.yang_type}")
        bits, allowed = RANGES[leaf.yang_type]

        def build(parent: Any, *value: Any) -> Any:
            return YANGDynClass(
                *value, base=RestrictedClassType(base_type=int, int_size=bits,
                                                 restriction_dict={"range": [allowed]}),
                is_leaf=True, yang_name=leaf.name, parent=parent,
                path_helper=parent._path_helper, extmethods=parent._extmethods,
                register_paths=True, namespace=AUGMENTS_NAMESPACE,
                defining_module=AUGMENTS_MODULE.stem, yang_type=leaf.yang_type,
                is_config=leaf.target.rsplit("/", 1)[-1] != "state")
        return build

    builders = {safe_name(leaf.name): (leaf, builder(leaf)) for leaf in leaves}
    members: dict[str, Any] = {"__slots__": tuple(f"_augment_{n}" for n in builders)}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for python_name, (_, build) in builders.items():
            setattr(self, f"_augment_{python_name}", build(self))
        base.__init__(self, *args, **kwargs)  # type: ignore[misc]

    members["__init__"] = __init__
    elements = OrderedDict(base._pyangbind_elements)  # type: ignore[attr-defined]
    for python_name, (leaf, build) in builders.items():
        slot = f"_augment_{python_name}"

        def getter(self: Any, slot: str = slot) -> Any:
            return getattr(self, slot)

        def setter(self: Any, value: Any, load: bool = False, slot: str = slot,
                   leaf: AugmentLeaf = leaf, build: Callable[..., Any] = build) -> None:
            # as pyangbind's generated setters: a value its type refuses is a ValueError
            if hasattr(value, "_utype"):
                value = value._utype(value)
            try:
                built = build(self, value)
            except (TypeError, ValueError):
                raise ValueError({"error-string": f"{leaf.name} must be of a type "
                                                  f"compatible with {leaf.yang_type}"}) from None
            setattr(self, slot, built)
            if hasattr(self, "_set"):
                self._set()

        members[f"_get_{python_name}"] = getter
        members[f"_set_{python_name}"] = setter
        members[python_name] = elements[python_name] = property(getter)
    members["_pyangbind_elements"] = elements
    return type(base.__name__, (base,), members)


def main() -> None:
    graft_augment_leaves(augment_leaves())
    from oc_config_validate.__main__ import main as runner_main

    runner_main()


if __name__ == "__main__":
    main()
