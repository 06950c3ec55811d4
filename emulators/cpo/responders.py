"""The agent's command responders: GET, GETNEXT, GETBULK and SET over :class:`~.mibview.MibView`.

- :class:`Instrumentation` replaces pysnmp's MIB tree: GET is a dict lookup, GETNEXT
  a bisection over the view's sorted OIDs, both still asking VACM (the responder's
  access callback) about every object they answer.
- :class:`BulkResponder` fills a GETBULK response up to the size the manager accepts
  and stops after the first repetition in which every variable is endOfMibView
  (RFC 3416 section 4.2.3 allows it; the stock responder repeats endOfMibView to
  the end of max-repetitions and caps a response at 64 variables).
- :class:`SetResponder` answers every SET with an authenticated Response that
  refuses it, by RFC 3416 section 4.2.5's checks in order, the error-index naming
  the first variable binding that fails (every one does: nothing here is
  writable, and nothing is ever changed). VACM comes first (RFC 3413 section 3.2):
  a name outside the requester's write view is noAccess (RFC 3416 4.2.5 (1)), and
  should VACM find no view or group at all, authorizationError with error-index 0
  (RFC 3413 3.2 (5); the agent's own configuration never leads there); then
  :meth:`~.mibview.MibView.write_refusal` (notWritable, noAccess or noCreation).
  pysnmp's own SET path is not used: it would ask the MIB tree this agent does not
  have, and it resets the error-index of a request with more variables than the
  index to 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pysnmp.entity import engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import AbstractMibInstrumController

from drivers.snmp.mibs import MibObject
from emulators.cpo.mibview import Snapshot

if TYPE_CHECKING:
    from emulators.cpo.agent import CpoAgent

MAX_REPETITIONS = 1000  # however large the response may be
RESPONSE_MARGIN = 64  # bytes kept free in a response for the PDU's own header
DEFAULT_RESPONSE_SIZE = 1472  # a manager that states no size: one Ethernet frame of UDP

# error-status values (RFC 3416 section 3)
GEN_ERR = 5
NO_ACCESS = 6
NO_CREATION = 11
AUTHORIZATION_ERROR = 16
NOT_WRITABLE = 17
ERROR_STATUS = {"noAccess": NO_ACCESS, "noCreation": NO_CREATION, "notWritable": NOT_WRITABLE}


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

    @staticmethod
    def _snapshot(agent: CpoAgent, ctx: dict[str, Any]) -> Snapshot:
        snapshot: Snapshot | None = ctx.get("msoSnapshot")
        if snapshot is None:
            snapshot = ctx["msoSnapshot"] = agent.snapshot()
        return snapshot

    def read_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        agent, view = self.agent, self.agent.view
        snapshot = self._snapshot(agent, ctx)
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

    def refuse_write(self, var_binds: Sequence[Any], snmp_engine: Any,
                     access: Any) -> tuple[int, int]:
        """(error-status, error-index) of a SET of ``var_binds``.

        RFC 3416 checks the bindings in order until one fails; here every one fails
        (nothing is writable), so the first decides, and the index is 1. ``access``
        is the responder's VACM callback (``verify_access``). An empty SET changes
        nothing and succeeds.
        """
        if not var_binds:
            return 0, 0
        name, value = var_binds[0]
        try:
            denied = access("write", (name, value), snmpEngine=snmp_engine, idx=0)
        except smi_error.AuthorizationError:
            return AUTHORIZATION_ERROR, 0  # RFC 3413 3.2 (5): no write view at all
        except smi_error.GenError:
            return GEN_ERR, 1
        if denied:
            return NO_ACCESS, 1  # RFC 3416 4.2.5 (1): outside the write view
        return ERROR_STATUS[self.agent.view.write_refusal(tuple(name))], 1

    def read_next_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        return [answer for answer, _ in self.read_next_sized(var_binds, ctx)]

    def read_next_sized(self, var_binds: Sequence[Any],
                        ctx: dict[str, Any]) -> list[tuple[tuple[Any, Any], int]]:
        """GETNEXT of each variable: ((name, value), encoded size) for each."""
        agent, view = self.agent, self.agent.view
        snapshot = self._snapshot(agent, ctx)
        answers: list[tuple[tuple[Any, Any], int]] = []
        end = len(view)
        for index, (name, _) in enumerate(var_binds):
            position = view.position_after(tuple(name))
            while position < end:
                value = agent.wire_value(position, snapshot)
                if value is not None and self._allowed(position, value, index, ctx):
                    answers.append(((agent.object_name(position), value),
                                    agent.encoded_size(position, value)))
                    break
                position += 1
            else:
                answers.append(((name, rfc1905.endOfMibView), encoded_size(name, None)))
        return answers


class BulkResponder(cmdrsp.BulkCommandResponder):  # type: ignore[misc]
    """GETBULK filled up to the manager's size limit, ended by a row of endOfMibView."""

    def __init__(self, snmp_engine: engine.SnmpEngine, snmp_context: context.SnmpContext):
        super().__init__(snmp_engine, snmp_context)
        self._size_limits: dict[Any, int] = {}

    def process_pdu(self, snmpEngine: Any, messageProcessingModel: Any,
                    securityModel: Any, securityName: Any, securityLevel: Any,
                    contextEngineId: Any, contextName: Any, pduVersion: Any,
                    PDU: Any, maxSizeResponseScopedPDU: Any,
                    stateReference: Any) -> None:
        self._size_limits[stateReference] = int(maxSizeResponseScopedPDU)
        try:
            super().process_pdu(snmpEngine, messageProcessingModel, securityModel,
                                securityName, securityLevel, contextEngineId, contextName,
                                pduVersion, PDU, maxSizeResponseScopedPDU, stateReference)
        finally:
            self._size_limits.pop(stateReference, None)

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
        budget = (self._size_limits.get(stateReference, DEFAULT_RESPONSE_SIZE)
                  - RESPONSE_MARGIN)
        first = instrumentation.read_next_sized(requested[:non_repeaters], ctx)
        answers = [answer for answer, _ in first]
        used = sum(size for _, size in first)
        repeating = requested[non_repeaters:]
        while repeating and repetitions > 0:
            row = instrumentation.read_next_sized(repeating, ctx)
            size = sum(size for _, size in row)
            if used + size > budget and answers:
                break  # RFC 3416 4.2.3: fewer repetitions rather than tooBig
            repeating = [answer for answer, _ in row]
            answers.extend(repeating)
            used += size
            repetitions -= 1
            if all(value is rfc1905.endOfMibView for _, value in repeating):
                break
        self.send_varbinds(snmpEngine, stateReference, 0, 0, answers)
        self.release_state_information(stateReference)


class SetResponder(cmdrsp.SetCommandResponder):  # type: ignore[misc]
    """Every SET refused in an authenticated Response (see the module's docstring)."""

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        var_binds = list(v2c.apiPDU.get_varbinds(PDU))
        instrumentation = self.snmpContext.get_mib_instrum(contextName)
        if not isinstance(instrumentation, Instrumentation):
            raise smi_error.GenError()
        status, index = instrumentation.refuse_write(var_binds, snmpEngine, self.verify_access)
        # RFC 3416 4.2.5: the Response carries the request's variable bindings unchanged
        self.send_varbinds(snmpEngine, stateReference, status, index, var_binds)
        self.release_state_information(stateReference)


def _length_octets(length: int) -> int:
    return 1 if length < 128 else 1 + (length.bit_length() + 7) // 8


def _tlv(content: int) -> int:
    return 1 + _length_octets(content) + content


def _oid_content(arcs: Sequence[int]) -> int:
    return 1 + sum(max(1, (int(arc).bit_length() + 6) // 7) for arc in arcs[2:])


def encoded_size(name: Sequence[int], value: Any) -> int:
    """The BER size of one variable binding, closely enough to fill a response."""
    if value is None:  # endOfMibView, noSuchObject, noSuchInstance
        content = 0
    elif isinstance(value, rfc1902.ObjectIdentifier):
        content = _oid_content(tuple(value))
    elif isinstance(value, rfc1902.OctetString):
        content = len(value.asOctets())
    else:
        content = int(value).bit_length() // 8 + 1
    return _tlv(_tlv(_oid_content(tuple(name))) + _tlv(content))
