"""The agent's command responders: GET, GETNEXT, GETBULK and SET over :class:`~.mibview.MibView`.

- :class:`Instrumentation` replaces pysnmp's MIB tree: GET is a dict lookup, GETNEXT
  a bisection over the view's sorted OIDs, both still asking VACM (the responder's
  access callback) about every object they answer.
- :class:`BulkResponder` fills a GETBULK response up to the size the manager accepts
  and stops after the first repetition in which every variable is endOfMibView
  (RFC 3416 section 4.2.3 allows it; the stock responder repeats endOfMibView to
  the end of max-repetitions and caps a response at 64 variables). Each binding is
  written in BER by :mod:`.wire`, which sizes it exactly and, for an authPriv
  request, is what is sent.
- :class:`SetResponder` answers every SET with an authenticated Response, by RFC
  3416 section 4.2.5's checks in order, the error-index naming the first variable
  binding that fails; when none fails, all are made (only sysContact, sysName and
  sysLocation can be). VACM comes first (RFC 3413 section 3.2): a name outside the
  requester's write view is noAccess (RFC 3416 4.2.5 (1)), and should VACM find no
  view or group at all, authorizationError with error-index 0 (RFC 3413 3.2 (5);
  the agent's own configuration never leads there); then
  :meth:`~.mibview.MibView.write_refusal` (notWritable, wrongType, wrongLength,
  wrongValue, noAccess or noCreation).
  pysnmp's own SET path is not used: it would ask the MIB tree this agent does not
  have, and it resets the error-index of a request with more variables than the
  index to 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pysnmp.entity import engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import AbstractMibInstrumController

from drivers.snmp.mibs import MibObject
from emulators.cpo import snmpengine, wire
from emulators.cpo.mibview import Snapshot

if TYPE_CHECKING:
    from emulators.cpo.agent import CpoAgent

MAX_REPETITIONS = 1000  # however large the response may be
RESPONSE_MARGIN = 64  # bytes kept free in a response for the PDU's own header
DEFAULT_RESPONSE_SIZE = 1472  # a manager that states no size: one Ethernet frame of UDP
USM_SECURITY_MODEL = 3  # RFC 3411 SnmpSecurityModel
AUTH_PRIV = 3  # RFC 3411 SnmpSecurityLevel


class Found(NamedTuple):
    """What a GETNEXT found: the instance at ``position`` of the view (None:
    endOfMibView), the binding's name (that instance's, or for endOfMibView the name
    asked) and the BER of the binding."""

    position: int | None
    name: tuple[int, ...]
    encoded: bytes


# error-status values (RFC 3416 section 3)
GEN_ERR = 5
NO_ACCESS = 6
NO_CREATION = 11
AUTHORIZATION_ERROR = 16
NOT_WRITABLE = 17
WRONG_TYPE = 7
WRONG_LENGTH = 8
WRONG_VALUE = 10
ERROR_STATUS = {"noAccess": NO_ACCESS, "noCreation": NO_CREATION, "notWritable": NOT_WRITABLE,
                "wrongType": WRONG_TYPE, "wrongLength": WRONG_LENGTH, "wrongValue": WRONG_VALUE}
"""RFC 3416's error-status values, by the refusal's name."""


class Instrumentation(AbstractMibInstrumController):  # type: ignore[misc]
    """GET and GETNEXT over the view's sorted OIDs, asking VACM about what they answer.

    VACM's verdict is asked once per object (column or scalar) and request: the agent
    opens views on whole subtrees only, never on single instances.
    """

    def __init__(self, agent: CpoAgent):
        self.agent = agent

    def _allowed(self, position: int, value: Any, index: int, ctx: dict[str, Any]) -> bool:
        access = ctx.get("acFun")
        if access is None:
            return True
        node = self.agent.view.nodes[position]
        verdicts: dict[MibObject, bool] = ctx.setdefault("msoVerdicts", {})
        verdict = verdicts.get(node)
        if verdict is None:
            ctx["idx"] = index
            verdict = verdicts[node] = not access("read", (self.agent.view.oids[position],
                                                           value), **ctx)
        return verdict

    def snapshot_of(self, ctx: dict[str, Any]) -> Snapshot:
        """The snapshot of the request whose context is ``ctx`` (taken at its first read)."""
        snapshot: Snapshot | None = ctx.get("msoSnapshot")
        if snapshot is None:
            snapshot = ctx["msoSnapshot"] = self.agent.snapshot()
        return snapshot

    def read_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        agent, view = self.agent, self.agent.view
        snapshot = self.snapshot_of(ctx)
        answers: list[tuple[Any, Any]] = []
        for index, (name, _) in enumerate(var_binds):
            oid = tuple(name)
            position = view.position(oid)
            value = None if position is None else agent.wire_value(position, snapshot)
            if value is None:
                answers.append((name, rfc1905.noSuchInstance if view.is_object(oid)
                                else rfc1905.noSuchObject))
            elif position is not None and not self._allowed(position, value, index, ctx):
                answers.append((name, rfc1905.noSuchObject))
            else:
                answers.append((name, value))
        return answers

    def write(self, var_binds: Sequence[Any], snmp_engine: Any,
              access: Any) -> tuple[int, int]:
        """(error-status, error-index) of a SET of ``var_binds``, made when it is
        ``(0, 0)``.

        RFC 3416 checks the bindings in order and the first that fails decides, with
        its index (from 1); only when none fails are they all made, together (as one
        operation: a SET is all or nothing). ``access`` is the responder's VACM
        callback (``verify_access``). An empty SET changes nothing and succeeds.
        """
        view = self.agent.view
        changes: list[tuple[tuple[int, ...], bytes]] = []
        for index, (name, value) in enumerate(var_binds, start=1):
            try:
                denied = access("write", (name, value), snmpEngine=snmp_engine, idx=index - 1)
            except smi_error.AuthorizationError:
                return AUTHORIZATION_ERROR, 0  # RFC 3413 3.2 (5): no write view at all
            except smi_error.GenError:
                return GEN_ERR, index
            if denied:
                if _community_based(snmp_engine):  # RFC 3418: a use the community may not make
                    snmpengine.count_bad_community_use(snmp_engine)
                return NO_ACCESS, index  # RFC 3416 4.2.5 (1): outside the write view
            octets = _octets(value)
            refusal = view.write_refusal(tuple(name), octets)
            if refusal is not None:
                return ERROR_STATUS[refusal], index
            assert octets is not None  # write_refusal lets only octets through
            changes.append((tuple(name), octets))
        view.write(changes)
        return 0, 0

    def read_next_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        snapshot = self.snapshot_of(ctx)
        return [self.pysnmp_binding(found, snapshot)
                for found in self.read_next_encoded(var_binds, ctx)]

    def read_next_encoded(self, var_binds: Sequence[Any], ctx: dict[str, Any]) -> list[Found]:
        """GETNEXT of each variable: what was found for each, with its BER."""
        view = self.agent.view
        asked = [tuple(name) for name, _ in var_binds]
        return self._scan([(name, view.position_after(name)) for name in asked], ctx)

    def read_on(self, row: Sequence[Found], ctx: dict[str, Any]) -> list[Found]:
        """GETNEXT of what each of ``row`` found (GETBULK's next repetition), from where
        it was found rather than by its name."""
        view = self.agent.view
        end = len(view)
        return self._scan([(found.name, end) if found.position is None
                           else (view.oids[found.position], found.position + 1)
                           for found in row], ctx)

    def _scan(self, starts: Sequence[tuple[tuple[int, ...], int]],
              ctx: dict[str, Any]) -> list[Found]:
        """For each (name asked, first position after it): the first instance there or
        after that exists and VACM lets the requester read; endOfMibView past the end."""
        agent, view = self.agent, self.agent.view
        snapshot = self.snapshot_of(ctx)
        nodes = view.nodes
        verdicts: dict[MibObject, bool] = ctx.setdefault("msoVerdicts", {})
        answers: list[Found] = []
        end = len(view)
        for index, (asked, position) in enumerate(starts):
            while position < end:
                encoded = agent.encoded_binding(position, snapshot)
                if encoded is not None:
                    allowed = verdicts.get(nodes[position])
                    if allowed is None:
                        allowed = self._allowed(position, agent.wire_value(position, snapshot),
                                                index, ctx)
                    if allowed:
                        answers.append(Found(position, view.oids[position], encoded))
                        break
                position += 1
            else:
                answers.append(Found(None, asked, wire.binding(wire.name(asked),
                                                               wire.END_OF_MIB_VIEW)))
        return answers

    def pysnmp_binding(self, found: Found, snapshot: Snapshot) -> tuple[Any, Any]:
        """What was found, as pysnmp's (name, value)."""
        if found.position is None:
            return rfc1902.ObjectName(found.name), rfc1905.endOfMibView
        return (self.agent.object_name(found.position),
                self.agent.wire_value(found.position, snapshot))


class BulkResponder(cmdrsp.BulkCommandResponder):  # type: ignore[misc]
    """GETBULK filled up to the manager's size limit, ended by a row of endOfMibView.

    The bindings are sized and, for an authPriv request, sent as their own BER
    (:mod:`.wire`); any other request's go as pysnmp values.
    """

    def __init__(self, snmp_engine: engine.SnmpEngine, snmp_context: context.SnmpContext):
        super().__init__(snmp_engine, snmp_context)
        self._requests: dict[Any, tuple[int, bool]] = {}

    def process_pdu(self, snmpEngine: Any, messageProcessingModel: Any,
                    securityModel: Any, securityName: Any, securityLevel: Any,
                    contextEngineId: Any, contextName: Any, pduVersion: Any,
                    PDU: Any, maxSizeResponseScopedPDU: Any,
                    stateReference: Any) -> None:
        self._requests[stateReference] = (
            int(maxSizeResponseScopedPDU),
            int(securityModel) == USM_SECURITY_MODEL and int(securityLevel) == AUTH_PRIV)
        try:
            super().process_pdu(snmpEngine, messageProcessingModel, securityModel,
                                securityName, securityLevel, contextEngineId, contextName,
                                pduVersion, PDU, maxSizeResponseScopedPDU, stateReference)
        finally:
            self._requests.pop(stateReference, None)

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        non_repeaters = max(0, int(v2c.apiBulkPDU.get_non_repeaters(PDU)))
        repetitions = min(MAX_REPETITIONS,
                          max(0, int(v2c.apiBulkPDU.get_max_repetitions(PDU))))
        requested = list(v2c.apiPDU.get_varbinds(PDU))
        non_repeaters = min(non_repeaters, len(requested))
        instrumentation = self.snmpContext.get_mib_instrum(contextName)
        if not isinstance(instrumentation, Instrumentation):
            raise smi_error.GenError()
        ctx = {"snmpEngine": snmpEngine, "acFun": self.verify_access, "cbCtx": self.cbCtx}
        size_limit, encoded_here = self._requests.get(stateReference,
                                                      (DEFAULT_RESPONSE_SIZE, False))
        budget = size_limit - RESPONSE_MARGIN
        answers = instrumentation.read_next_encoded(requested[:non_repeaters], ctx)
        used = sum(len(found.encoded) for found in answers)
        row: list[Found] | None = None
        while len(requested) > non_repeaters and repetitions > 0:
            row = (instrumentation.read_next_encoded(requested[non_repeaters:], ctx)
                   if row is None else instrumentation.read_on(row, ctx))
            size = sum(len(found.encoded) for found in row)
            if used + size > budget and answers:
                break  # RFC 3416 4.2.3: fewer repetitions rather than tooBig
            answers.extend(row)
            used += size
            repetitions -= 1
            if all(found.position is None for found in row):
                break

        def as_pysnmp() -> list[tuple[Any, Any]]:
            snapshot = instrumentation.snapshot_of(ctx)
            return [instrumentation.pysnmp_binding(found, snapshot) for found in answers]

        if encoded_here:
            with wire.sending(int(v2c.apiPDU.get_request_id(PDU)),
                              [found.encoded for found in answers], as_pysnmp):
                self.send_varbinds(snmpEngine, stateReference, 0, 0, [])
        else:
            self.send_varbinds(snmpEngine, stateReference, 0, 0, as_pysnmp())
        self.release_state_information(stateReference)


class SetResponder(cmdrsp.SetCommandResponder):  # type: ignore[misc]
    """Every SET checked, and made or refused, in an authenticated Response (see the
    module's docstring)."""

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        var_binds = list(v2c.apiPDU.get_varbinds(PDU))
        instrumentation = self.snmpContext.get_mib_instrum(contextName)
        if not isinstance(instrumentation, Instrumentation):
            raise smi_error.GenError()
        status, index = instrumentation.write(var_binds, snmpEngine, self.verify_access)
        # RFC 3416 4.2.5: the Response carries the request's variable bindings unchanged
        self.send_varbinds(snmpEngine, stateReference, status, index, var_binds)
        self.release_state_information(stateReference)


COMMUNITY_MODELS = (1, 2)
"""The security models of community-based messages: SNMPv1 and SNMPv2c (RFC 3411)."""


def _community_based(snmp_engine: Any) -> bool:
    """Whether the request being answered came with a community (SNMPv1 or v2c)."""
    request = snmp_engine.observer.get_execution_context("rfc3412.receiveMessage:request")
    return int(request["securityModel"]) in COMMUNITY_MODELS


def _octets(value: Any) -> bytes | None:
    """The octets of an OCTET STRING value, ``None`` for a value of any other type."""
    if isinstance(value, rfc1902.OctetString) \
            and not isinstance(value, rfc1902.IpAddress | rfc1902.Opaque):
        return bytes(value)
    return None
