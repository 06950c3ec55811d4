"""Module discovery on the switch emulator: which YANG modules it implements, and the
text of each, so that a client with no copy of any of them can fetch them all and use
them.

Three views of one module list (:class:`Library`):

- NETCONF monitoring (RFC 6022, ietf-netconf-monitoring@2010-10-04): the entries of
  ``/netconf-state/schemas`` (:meth:`Library.schemas`; the rest of that tree is
  emulators/netconf/monitoring.py's): one per schema the ``<get-schema>`` operation
  returns (RFC 6022 3.1), each with its identifier, version, format (YANG),
  namespace and location ``NETCONF``. Every module of the library is served, the
  standard ones included (ietf-netconf, ietf-netconf-monitoring, ietf-yang-library
  and the modules they import), from the text the server carries in yang/
  (``<name>@<revision>.yang``, as RFC 6241, 6022, 8525, 6991 and 8342 publish them);
  a module whose text the server does not carry would be listed in the YANG library
  only, never as a schema.
- The YANG library (RFC 8525, ietf-yang-library@2019-01-04): ``/yang-library`` with
  one module set, one schema, the datastores that use it (running, candidate when
  there is one, startup) and its ``content-id``; and the deprecated
  ``/modules-state`` (the shape of RFC 7895, kept in that revision) for clients
  written before RFC 8525, with its ``module-set-id``. Each id is a digest of its own
  tree (without the id), so it changes whenever what that tree says changes, as the
  module asks of both.
- The hello (:meth:`Library.capabilities`): the URI of each module a client looks for
  there (RFC 6020 5.6.4: ``namespace?module=…&revision=…[&features=…]``):
  msoctl-congestion (the driver checks its revision), ietf-netconf with the features
  the server's capabilities enable (emulators/netconf/capabilities.py: so that a
  generic client sees :confirmed-commit:1.1 as the module's ``confirmed-commit``
  feature too) and ietf-netconf-monitoring, as RFC 6022 asks of a server that
  implements it; and the YANG library in the form of the revision implemented.
  ietf-yang-library@2019-01-04 is announced as RFC 8526 2 defines it,
  ``urn:ietf:params:netconf:capability:yang-library:1.1?revision=2019-01-04&content-id=…``
  with the content-id of ``/yang-library``; and, because
  this revision still carries ``/modules-state`` and RFC 7950 5.6.4 asks
  ``:yang-library:1.0?revision=…&module-set-id=…`` of every NETCONF server that
  implements YANG 1.1 modules (msoctl-congestion is one) and is not an NMDA server,
  also in that form, with the module-set-id of ``/modules-state`` (a client written
  for RFC 7950 alone finds the library it looks for). Both name the revision
  implemented; neither names an id that its tree does not hold. This server has no
  ``<get-data>`` and no operational datastore (RFC 8526 3): a client that takes
  ``:yang-library:1.1`` for the NMDA operations is answered operation-not-supported.

``<get-schema>`` errors (RFC 6022 3.1): no ``identifier`` is ``missing-element``; no
schema matching identifier, version and format is ``invalid-value`` (bad-element
naming the parameter that ruled the last candidates out); more than one match is
``operation-failed`` with error-app-tag ``data-not-unique``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import MODULE, NAMESPACE, REVISION
from emulators.netconf.capabilities import (
    CANDIDATE,
    NETCONF_MODULE,
    NETCONF_REVISION,
    STARTUP,
    announced,
    netconf_features,
)
from emulators.netconf.messages import NETCONF_NS, RpcError
from emulators.netconf.monitoring import MONITORING_NS, SCHEMA_FORMAT, Schema
from emulators.netconf.validation import YANG_DIRECTORY

MONITORING_REVISION = "2010-10-04"
MONITORING_CAPABILITY = (f"{MONITORING_NS}?module=ietf-netconf-monitoring"
                         f"&revision={MONITORING_REVISION}")
YANG_LIBRARY_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
YANG_LIBRARY_REVISION = "2019-01-04"
YANG_LIBRARY_1_0 = "urn:ietf:params:netconf:capability:yang-library:1.0"  # RFC 7950 5.6.4
YANG_LIBRARY_1_1 = "urn:ietf:params:netconf:capability:yang-library:1.1"  # RFC 8526 2
DATASTORES_NS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
MODULE_FILE = YANG_DIRECTORY / f"{MODULE}.yang"
YANG_TYPES_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-types"
INET_TYPES_NS = "urn:ietf:params:xml:ns:yang:ietf-inet-types"
MODULE_SET = "switch"


@dataclass(frozen=True)
class Module:
    """One module of the library; ``source`` is the YANG text get-schema returns
    (``None``: listed, not served); an imported-only module is not ``implemented``;
    ``in_hello``: announced as a capability too."""

    name: str
    revision: str
    namespace: str
    implemented: bool = True
    features: tuple[str, ...] = ()
    source: Path | None = None
    in_hello: bool = False

    @property
    def capability(self) -> str:
        """The module's capability URI (RFC 6020 5.6.4): its features as a comma-separated
        list, the parameter left out when there is none."""
        uri = f"{self.namespace}?module={self.name}&revision={self.revision}"
        return f"{uri}&features={','.join(self.features)}" if self.features else uri


def carried(name: str, revision: str) -> Path:
    """The text of a standard module the server carries: yang/<name>@<revision>.yang."""
    return YANG_DIRECTORY / f"{name}@{revision}.yang"


def _standard(name: str, revision: str, namespace: str, *, implemented: bool = True,
              features: tuple[str, ...] = (), in_hello: bool = False) -> Module:
    return Module(name, revision, namespace, implemented=implemented, features=features,
                  source=carried(name, revision), in_hello=in_hello)


MSOCTL_MODULES = (Module(MODULE, REVISION, NAMESPACE, source=MODULE_FILE, in_hello=True),)
"""The data module of the msoctl face: msoctl-congestion."""


def switch_modules(capabilities: Iterable[str],
                   data_modules: Iterable[Module] | None = None) -> tuple[Module, ...]:
    """What a switch emulator announcing ``capabilities`` implements: its data modules
    (msoctl-congestion unless others are given), ietf-netconf with the features those
    capabilities enable, the monitoring and the library; and the modules the standard
    ones import (every import of these texts, and nothing more: ietf-netconf@2011-06-01
    imports ietf-inet-types only). The imports of other data modules are theirs to
    give."""
    return (
        *(MSOCTL_MODULES if data_modules is None else data_modules),
        _standard(NETCONF_MODULE, NETCONF_REVISION, NETCONF_NS,
                  features=netconf_features(capabilities), in_hello=True),
        _standard("ietf-netconf-monitoring", MONITORING_REVISION, MONITORING_NS,
                  in_hello=True),
        _standard("ietf-yang-library", YANG_LIBRARY_REVISION, YANG_LIBRARY_NS),
        _standard("ietf-yang-types", "2013-07-15", YANG_TYPES_NS, implemented=False),
        _standard("ietf-inet-types", "2013-07-15", INET_TYPES_NS, implemented=False),
        _standard("ietf-datastores", "2018-02-14", DATASTORES_NS, implemented=False),
    )


def switch_library(capabilities: Iterable[str],
                   data_modules: Iterable[Module] | None = None) -> Library:
    """The YANG library of a switch emulator announcing ``capabilities``: its modules
    (:func:`switch_modules`), and its datastores (running; candidate with :candidate;
    startup with :startup)."""
    present = announced(capabilities)
    datastores = ("running", *(("candidate",) if CANDIDATE in present else ()),
                  *(("startup",) if STARTUP in present else ()))
    return Library(switch_modules(present, data_modules), datastores=datastores)


@dataclass
class Library:
    """The modules a server implements, as monitoring data, YANG library data and hello
    capabilities, and the ``<get-schema>`` operation over their sources."""

    modules: tuple[Module, ...]
    datastores: tuple[str, ...] = ("running", "candidate", "startup")

    def __post_init__(self) -> None:
        missing = [str(module.source) for module in self.modules
                   if module.source is not None and not module.source.is_file()]
        if missing:  # a schema listed that get-schema could not return
            raise FileNotFoundError(f"YANG text not found: {', '.join(missing)}")

    @cached_property
    def content_id(self) -> str:
        """``/yang-library/content-id`` (RFC 8525): a digest of the rest of that tree."""
        return _digest(self._yang_library(content_id=None))

    @cached_property
    def module_set_id(self) -> str:
        """``/modules-state/module-set-id`` (RFC 7895, deprecated in RFC 8525): a digest
        of that tree's module list."""
        return _digest(self._modules_state(module_set_id=None))

    def capabilities(self) -> tuple[str, ...]:
        """The hello's capabilities for these modules (see the module docstring)."""
        return (*(module.capability for module in self.modules if module.in_hello),
                f"{YANG_LIBRARY_1_1}?revision={YANG_LIBRARY_REVISION}"
                f"&content-id={self.content_id}",
                f"{YANG_LIBRARY_1_0}?revision={YANG_LIBRARY_REVISION}"
                f"&module-set-id={self.module_set_id}")

    @cached_property
    def _texts(self) -> dict[str, str]:
        return {module.name: module.source.read_text(encoding="utf-8")
                for module in self.modules if module.source is not None}

    # ---- data for <get> -------------------------------------------------------------

    def state(self) -> list[_Element]:
        """``/yang-library`` and ``/modules-state``, new elements."""
        return [self._yang_library(self.content_id), self._modules_state(self.module_set_id)]

    def schemas(self) -> list[Schema]:
        """What ``<get-schema>`` returns, for ``/netconf-state/schemas`` (RFC 6022 2.1.3):
        every module whose text the server carries, and no other."""
        return [Schema(module.name, module.revision, module.namespace)
                for module in self.modules if module.source is not None]

    def _yang_library(self, content_id: str | None) -> _Element:
        root = etree.Element(_y("yang-library"), nsmap={None: YANG_LIBRARY_NS})
        module_set = _sub(root, _y("module-set"))
        _sub(module_set, _y("name"), MODULE_SET)
        for module in self._ordered(implemented=True):
            entry = _sub(module_set, _y("module"))
            _sub(entry, _y("name"), module.name)
            _sub(entry, _y("revision"), module.revision)
            _sub(entry, _y("namespace"), module.namespace)
            for feature in module.features:
                _sub(entry, _y("feature"), feature)
        for module in self._ordered(implemented=False):
            entry = _sub(module_set, _y("import-only-module"))
            _sub(entry, _y("name"), module.name)
            _sub(entry, _y("revision"), module.revision)
            _sub(entry, _y("namespace"), module.namespace)
        schema = _sub(root, _y("schema"))
        _sub(schema, _y("name"), MODULE_SET)
        _sub(schema, _y("module-set"), MODULE_SET)
        for name in self.datastores:
            datastore = _sub(root, _y("datastore"))
            identity = etree.SubElement(datastore, _y("name"), nsmap={"ds": DATASTORES_NS})
            identity.text = f"ds:{name}"
            _sub(datastore, _y("schema"), MODULE_SET)
        if content_id is not None:
            _sub(root, _y("content-id"), content_id)
        return root

    def _modules_state(self, module_set_id: str | None) -> _Element:
        root = etree.Element(_y("modules-state"), nsmap={None: YANG_LIBRARY_NS})
        if module_set_id is not None:
            _sub(root, _y("module-set-id"), module_set_id)
        for module in (*self._ordered(implemented=True), *self._ordered(implemented=False)):
            entry = _sub(root, _y("module"))
            _sub(entry, _y("name"), module.name)
            _sub(entry, _y("revision"), module.revision)
            _sub(entry, _y("namespace"), module.namespace)
            for feature in module.features:
                _sub(entry, _y("feature"), feature)
            _sub(entry, _y("conformance-type"),
                 "implement" if module.implemented else "import")
        return root

    def _ordered(self, *, implemented: bool) -> Iterator[Module]:
        return (module for module in self.modules if module.implemented is implemented)

    # ---- <get-schema> ----------------------------------------------------------------

    def get_schema(self, session: object, rpc: _Element) -> _Element:
        """The ``<get-schema>`` operation (RFC 6022 3.1): ``<data>`` holding the text."""
        operation = next(child for child in rpc if isinstance(child.tag, str))
        identifier = _parameter(operation, "identifier")
        if identifier is None:
            raise RpcError("missing-element", "get-schema needs an identifier",
                           error_type="protocol", info={"bad-element": "identifier"})
        version = _parameter(operation, "version")
        wanted_format = _format(operation)
        found = [module for module in self.modules
                 if module.source is not None and module.name == identifier]
        ruled_out = "identifier"
        if found and version is not None:
            found = [module for module in found if module.revision == version]
            ruled_out = "version"
        if found and wanted_format is not None and wanted_format != SCHEMA_FORMAT:
            found = []
            ruled_out = "format"
        if not found:
            raise RpcError("invalid-value", f"no schema {identifier!r} "
                           + (f"version {version!r} " if version is not None else "")
                           + (f"in format {wanted_format!r} " if wanted_format else "")
                           + "on this server", error_type="protocol",
                           info={"bad-element": ruled_out})
        if len(found) > 1:  # several versions and none asked for
            raise RpcError("operation-failed", f"{len(found)} versions of {identifier!r}: "
                           "give a version", error_type="protocol", app_tag="data-not-unique")
        data = etree.Element(_m("data"), nsmap={None: MONITORING_NS})
        data.text = self._texts[found[0].name]
        return data


def _digest(tree: _Element) -> str:
    return hashlib.sha256(etree.tostring(tree, method="c14n")).hexdigest()[:40]


def _m(local: str) -> str:
    return f"{{{MONITORING_NS}}}{local}"


def _y(local: str) -> str:
    return f"{{{YANG_LIBRARY_NS}}}{local}"


def _sub(parent: _Element, tag: str, text: str | None = None) -> _Element:
    element = etree.SubElement(parent, tag)
    if text is not None:
        element.text = text
    return element


def _parameter(operation: _Element, name: str) -> str | None:
    element = operation.find(_m(name))
    return None if element is None else (element.text or "").strip()


def _format(operation: _Element) -> str | None:
    """The ``format`` identity's name (an identityref: ``ncm:yang``, or ``yang``);
    ``invalid-value`` when a prefix names another module than ietf-netconf-monitoring.

    An unprefixed name is taken for one of the module's identities whatever the
    default namespace is where it stands: RFC 7950 9.10.3 reads it in the default
    namespace, but clients (ncclient among them) write ``<ns0:format>yang</ns0:format>``
    and mean the monitoring module's identity, the only kind a format can be."""
    element = operation.find(_m("format"))
    if element is None:
        return None
    prefix, _, name = (element.text or "").strip().rpartition(":")
    if (prefix and element.nsmap.get(prefix) != MONITORING_NS) or not name:
        raise RpcError("invalid-value", f"format {element.text!r} is not a schema format "
                       "of ietf-netconf-monitoring", error_type="protocol",
                       info={"bad-element": "format"})
    return name

