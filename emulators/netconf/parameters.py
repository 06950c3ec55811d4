"""The parameters of each NETCONF operation the datastores answer, and the capability each
needs, as one table: the ``input`` of ietf-netconf@2011-06-01's rpc statements with their
``if-feature`` (each feature read as its capability: emulators/netconf/capabilities.py),
RFC 6243 4.5's ``<with-defaults>`` (ietf-netconf-with-defaults augments get,
get-config and copy-config with it) and RFC 6022 3.1's get-schema.

:func:`check` holds a request to the table before its operation runs:

- an operation whose capability the server does not announce (commit without
  :candidate, cancel-commit without :confirmed-commit:1.1) is
  ``operation-not-supported``, error-type protocol;
- an element among an operation's parameters that the operation does not take, or
  takes only with a capability the server does not announce (``<with-defaults>``
  without :with-defaults, ``<persist>`` without :confirmed-commit:1.1), is
  ``unknown-element`` (RFC 6241 appendix A: "An unexpected element is present"),
  error-type protocol, ``bad-element`` naming it: to a server without the capability
  the parameter is as unknown as any other element;
- an element in a namespace no parameter of any operation here is in is
  ``unknown-namespace`` (RFC 6241 appendix A: "An unexpected namespace is present"),
  error-type protocol, with ``bad-element`` and ``bad-namespace`` (as netconfd answers).

tests/conformance/test_netconf_parameters.py checks :data:`OPERATIONS` against the
module as libyang reads it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from lxml import etree
from lxml.etree import _Element

from emulators.netconf.capabilities import (
    CANDIDATE,
    CONFIRMED_COMMIT,
    CONFIRMED_COMMIT_1_0,
    URL,
    VALIDATE,
    VALIDATE_1_0,
    WITH_DEFAULTS,
)
from emulators.netconf.messages import NETCONF_NS, RpcError
from emulators.netconf.monitoring import MONITORING_NS

WITH_DEFAULTS_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults"
# Either version of a capability brings what both have (RFC 6241 8.4 and 8.6: 1.1 adds
# persist, persist-id and test-only to 1.0's confirmed commit and validate).
CONFIRMING = (CONFIRMED_COMMIT, CONFIRMED_COMMIT_1_0)
VALIDATING = (VALIDATE, VALIDATE_1_0)


@dataclass(frozen=True)
class Parameter:
    """One parameter: its element, and the capabilities of which any one brings it
    (none: always there)."""

    name: str
    needs: tuple[str, ...] = ()
    namespace: str = NETCONF_NS


@dataclass(frozen=True)
class Operation:
    parameters: tuple[Parameter, ...]
    needs: tuple[str, ...] = ()  # the capabilities of which any one brings the operation


_WITH_DEFAULTS = Parameter("with-defaults", (WITH_DEFAULTS,), WITH_DEFAULTS_NS)

OPERATIONS: dict[tuple[str, str], Operation] = {
    (NETCONF_NS, "get-config"): Operation((
        Parameter("source"), Parameter("filter"), _WITH_DEFAULTS)),
    (NETCONF_NS, "edit-config"): Operation((
        Parameter("target"), Parameter("default-operation"),
        Parameter("test-option", VALIDATING), Parameter("error-option"),
        Parameter("config"), Parameter("url", (URL,)))),
    (NETCONF_NS, "copy-config"): Operation((
        Parameter("target"), Parameter("source"), _WITH_DEFAULTS)),
    (NETCONF_NS, "delete-config"): Operation((Parameter("target"),)),
    (NETCONF_NS, "lock"): Operation((Parameter("target"),)),
    (NETCONF_NS, "unlock"): Operation((Parameter("target"),)),
    (NETCONF_NS, "get"): Operation((Parameter("filter"), _WITH_DEFAULTS)),
    (NETCONF_NS, "commit"): Operation((
        Parameter("confirmed", CONFIRMING), Parameter("confirm-timeout", CONFIRMING),
        Parameter("persist", (CONFIRMED_COMMIT,)),
        Parameter("persist-id", (CONFIRMED_COMMIT,))), needs=(CANDIDATE,)),
    (NETCONF_NS, "discard-changes"): Operation((), needs=(CANDIDATE,)),
    (NETCONF_NS, "cancel-commit"): Operation((Parameter("persist-id"),),
                                             needs=(CONFIRMED_COMMIT,)),
    (NETCONF_NS, "validate"): Operation((Parameter("source"),), needs=VALIDATING),
    (MONITORING_NS, "get-schema"): Operation((
        Parameter("identifier", namespace=MONITORING_NS),
        Parameter("version", namespace=MONITORING_NS),
        Parameter("format", namespace=MONITORING_NS)), needs=(MONITORING_NS,)),
}


KNOWN_NAMESPACES = frozenset(parameter.namespace for spec in OPERATIONS.values()
                             for parameter in spec.parameters)


def check(operation: _Element, announced: Collection[str]) -> None:
    """Raise the :class:`RpcError` with which the server refuses ``operation`` (the
    operation's element) for what ``announced`` (capability URIs without their
    parameters) lacks; return when nothing is wrong, or when the operation is not in
    the table."""
    name = etree.QName(operation)
    spec = OPERATIONS.get((name.namespace or "", name.localname))
    if spec is None:
        return
    if spec.needs and not any(capability in announced for capability in spec.needs):
        raise RpcError("operation-not-supported",
                       f"{name.localname} needs {' or '.join(spec.needs)}",
                       error_type="protocol")
    taken = {(parameter.namespace, parameter.name): parameter for parameter in spec.parameters}
    for child in operation:
        if not isinstance(child.tag, str):
            continue
        tag = etree.QName(child)
        if (tag.namespace or "") not in KNOWN_NAMESPACES:
            raise RpcError("unknown-namespace", f"{tag.localname} is in {tag.namespace!r}, "
                           f"which no parameter of {name.localname} is in",
                           error_type="protocol", info={"bad-element": tag.localname,
                                                        "bad-namespace": tag.namespace or ""})
        parameter = taken.get((tag.namespace or "", tag.localname))
        if parameter is None:
            why = f"{name.localname} takes no parameter {tag.localname!r}" + (
                f" in {tag.namespace}" if tag.namespace else "")
        elif parameter.needs and not any(c in announced for c in parameter.needs):
            why = (f"{tag.localname} is a parameter of {' or '.join(parameter.needs)}, "
                   "which this server does not announce")
        else:
            continue
        raise RpcError("unknown-element", why, error_type="protocol",
                       info={"bad-element": tag.localname})
