"""Model of a liquid-crystal (LCoS) beam-steering optical circuit switch.

What is modelled, and why:

- The port map: ingress ports 1..N each steer to at most one egress port
  N+1..2N, and each egress port takes at most one ingress.
- Switching time. The LC phase response slows as the cell cools: the
  response time doubles for every 10 degC below 40 degC (8 ms at 40 degC,
  within the "under 10 ms at 40 degC" figure published for LCoS engines), and
  a reconfiguration takes three response times plus 6 ms to compute and load
  the hologram: about 30 ms warm, 74 ms at 25 degC. The whole hologram is
  written at once, so a bulk command costs one reconfiguration however many
  connections it changes; commands arriving while the engine is busy queue
  behind it. Connections a command leaves unchanged stay lit.
- Cell temperature: a heater holds the cell at its set point; after power-on
  it warms from ambient with a 90 s time constant, so a switch just out of a
  power loss is measurably slower.
- Insertion loss: a factory table per (ingress, egress) pair, 1.5-2.0 dB,
  derived deterministically from the serial number; each new connection lands
  within +-0.1 dB of it (repeatability).
- Crosstalk: every lit beam leaks into the two neighbouring egress ports,
  around -50 dB below its own output.
- Port states: enabled, disabled (the port's shutter is closed) and failed
  (the fault; light stops, and commands that would switch light through
  the port or change its shutter are refused; removing its connection is not).
- Monitors on every port read the optical model: an ingress monitor sees the
  light arriving, an egress monitor the light leaving. Accuracy within
  +-0.5 dB per port (a fixed calibration offset), 0.02 dB reading noise,
  and a photodiode noise floor near -60 dBm.
- Transients, for instruments that log power over time: the optical model
  can be asked for the power at a moment in the recent past (the last
  ``PATH_HISTORY_SECONDS``). A connection that a command removes or re-points
  stops passing light at the command; its new beam passes light once the
  reconfiguration completes (dark in between, as the hologram is rewritten),
  and the device remembers both moments for that long.
- Power loss: all light stops; the map and port settings are in non-volatile
  memory (a JSON file when the lab gives one), and at boot the map comes back
  in RESTore mode, or stays dark in DARK mode. Every client's status comes
  back as at power-on (PON set), also after a restart without power loss:
  the controller that keeps the status has restarted.
- An LC engine fault (fault kind ``engine``): the engine no longer writes
  holograms, so every command that would change the map is refused (-240
  "Hardware error"); the paths already set stay lit (the switch fails static).
- Status: OPERation SETTling while a reconfiguration runs; QUEStionable
  TEMPerature while the cell is more than 2 degC below its set point, bit 9
  while a port has failed, bit 10 while the engine has a fault (see
  drivers/ocs/commands.py); ``*TST?`` reports the last two.

How it answers (the dialect; attributes, switchable while it runs):

- ``reply_form``: ``"polatis"`` (the default, as real units of the family
  answer: ``:OXC:SWIT:CONN:PORT?`` a quoted string, ``"65"``, ``""`` when
  unconnected; ``:PMON:POW?`` a parenthesised list, at most
  ``power_query_max_ports`` (256) ports per query -- more is refused with -223:
  the chunk size third-party drivers keep to, a limit the unit is assumed to
  have) or ``"bare"`` (``65``/``0``; a plain comma-separated list, no limit).
- ``power_monitors``: ``False`` models a unit without monitors (``:PMON:POW?``
  is an undefined header, -113).
- ``shared_status`` (constructor only): one error queue and one set of status
  registers for every client, as on some real units; by default each client
  has its own.
- ``alarms_supported``: ``False`` models a unit without loss-of-light alarms (the
  ``:OXC:ALARm`` and ``:SYST:COMM:ALAR`` headers are undefined, -113). The alarms
  themselves are :attr:`OcsDevice.alarms` (emulators/ocs/alarms.py), served on a
  connection of their own by emulators/ocs/alarm_server.py.
- ``extensions``: ``False`` models a unit without this project's dialect extensions
  and the boot mode: ``:OXC:LC`` (cell temperature, switching time, insertion-loss
  table) and ``:OXC:BOOT:MODE`` are undefined headers, -113. Such a unit restores its
  map after a power loss, as the family's units do.
- ``identity_form``: ``"msoctl"`` (``MegaScaleOut,LCOCS-64x64,...``) or ``"polatis"``:
  ``*IDN?`` as a Polatis unit answers, ``Polatis,N-VST-64x64-HU1-DMHNV,...``, the size
  in the model field where third-party tools of the family read it.
- ``error_extras`` (:class:`~emulators.scpi.device.ScpiDevice`): ``False`` models a
  unit with ``:SYST:ERR[:NEXT]?`` only (no ``:ALL?``, ``:COUN?``, ``:CODE?``).

A plain unit of the family, as found on site, is ``extensions=False``,
``alarms=False``, ``identity_form="polatis"`` (and its power monitors, or none).

Change notification: every change of the light the switch passes (a map changed,
a port closed, opened or failed, power lost or back) is told to the optical model
(:meth:`~emulators.optics.model.Element.changed`), and so is the moment a new
beam will settle, so that whoever watches the light (the alarms) looks exactly
then instead of polling.

What clients asked (``requests``, a :class:`~emulators.scpi.requests.RequestLog`): the
device time of every program message received and a count of every command by its
key, so that a test can check a client's rate at the device itself.
"""

from __future__ import annotations

import json
import math
import random
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from drivers.ocs.commands import (
    DEVICE_ERRORS,
    OPERATION_SETTLING,
    POWER_QUERY_MAX_PORTS,
    QUESTIONABLE_ENGINE_FAULT,
    QUESTIONABLE_PORT_FAILED,
    QUESTIONABLE_TEMPERATURE,
    SELF_TEST_FAULTS,
)
from emulators.clock import command_time
from emulators.faults import Fault, FaultError
from emulators.ocs import nvram
from emulators.ocs.alarms import LosAlarms
from emulators.optics.model import NO_LIGHT_DBM, Element, InputPower, OpticalModel, dbm_sum
from emulators.scpi.device import ScpiDevice
from emulators.scpi.parser import ScpiError
from emulators.scpi.status import ConditionSource
from emulators.text import digits as _digits

LC_RESPONSE_AT_40C_SECONDS = 0.008
HOLOGRAM_LOAD_SECONDS = 0.006
CELL_SETPOINT_CELSIUS = 40.0
CELL_WARMUP_SECONDS = 90.0
MONITOR_FLOOR_DBM = -60.0
FLOOR_MATTERS_BELOW_DBM = MONITOR_FLOOR_DBM + 30.0
"""Light 30 dB above the monitor's floor reads the same with the floor added or not
(less than 0.01 dB, the reading's resolution): the floor (and its noise) is summed in
only below this."""
MONITOR_MAX_DBM = 26.0
PATH_HISTORY_SECONDS = 10.0
TEMPERATURE_QUESTIONABLE_BELOW_CELSIUS = 2.0
"""QUEStionable TEMPerature while the cell is this far below its set point."""
REPLY_FORMS = ("polatis", "bare")
IDENTITY_FORMS = ("msoctl", "polatis")
POLATIS_MANUFACTURER = "Polatis"


def polatis_model(size: int) -> str:
    """The model field of a Polatis unit's ``*IDN?``: its size as ``-NxN-``."""
    return f"N-VST-{size}x{size}-HU1-DMHNV"


def _error(code: int, detail: str = "") -> ScpiError:
    return ScpiError(code, detail, messages=DEVICE_ERRORS)


@dataclass
class _Path:
    egress: int
    lit_at: float  # device time the beam settles on its egress port
    loss_db: float


class _Paths(dict[int, _Path]):
    """The connections, ingress -> path, with the ingress feeding each egress kept beside:
    an egress port's light sums the beams landing on it and on its two neighbours, and
    must be found without walking every connection (a large lab asks for it thousands
    of times a second)."""

    def __init__(self, items: dict[int, _Path] | None = None):
        super().__init__()
        self.feeding: dict[int, int] = {}  # egress -> ingress
        for ingress, path in (items or {}).items():
            self[ingress] = path

    def __setitem__(self, ingress: int, path: _Path) -> None:
        old = self.get(ingress)
        if old is not None and self.feeding.get(old.egress) == ingress:
            del self.feeding[old.egress]
        super().__setitem__(ingress, path)
        self.feeding[path.egress] = ingress

    def __delitem__(self, ingress: int) -> None:
        old = self[ingress]
        super().__delitem__(ingress)
        if self.feeding.get(old.egress) == ingress:
            del self.feeding[old.egress]

    def clear(self) -> None:
        super().clear()
        self.feeding.clear()


@dataclass
class _GonePath:
    """A connection removed or re-pointed, remembered for questions about the past."""

    ingress: int
    path: _Path
    removed_at: float


def _factory_losses(rng: random.Random, size: int) -> list[list[float]]:
    """The factory's insertion loss table, dB, by [ingress - 1][egress - size - 1]: 1.5
    to 2.0 dB, beams steered far from the optical axis losing a little more, plus a
    unit's spread (``rng``, drawn row by row)."""
    scale = max(size - 1, 1)
    off_axis = [(n / scale - 0.5) ** 2 for n in range(size)]
    draw = rng.random
    return [[round(min(2.0, max(1.5, 1.56 + 0.5 * (row + column) + 0.15 * draw())), 3)
             for column in off_axis] for row in off_axis]


class OcsDevice(ScpiDevice):
    """One OCS: state, physics and the optical element it adds to the model."""

    SERIAL_PREFIX = "LC"

    def __init__(
        self,
        name: str,
        optics: OpticalModel,
        *,
        size: int = 64,
        serial: str | None = None,
        firmware: str = "2.4.1",
        ambient_celsius: float = 25.0,
        boot_seconds: float = 2.0,
        nvram_path: Path | None = None,
        crosstalk_db: float = -50.0,
        reply_form: str = "polatis",
        power_monitors: bool = True,
        shared_status: bool = False,
        manufacturer: str | None = None,
        model_name: str | None = None,
        alarms: bool = True,
        extensions: bool = True,
        identity_form: str = "msoctl",
        error_extras: bool = True,
    ):
        if not 1 <= size <= 512:
            raise ValueError("OCS size must be 1..512")
        if reply_form not in REPLY_FORMS:
            raise ValueError(f"reply form must be one of {REPLY_FORMS}, not {reply_form!r}")
        if identity_form not in IDENTITY_FORMS:
            raise ValueError(f"identity form must be one of {IDENTITY_FORMS}, "
                             f"not {identity_form!r}")
        polatis = identity_form == "polatis"
        if polatis and serial is None:  # the family's serial numbers are digits
            serial = f"{zlib.crc32(name.encode()) % 10**6:06d}"
        super().__init__(name, optics, serial=serial, firmware=firmware,
                         shared_status=shared_status,
                         manufacturer=manufacturer or (POLATIS_MANUFACTURER if polatis else None))
        self.size = size
        self.reply_form = reply_form
        self.power_monitors = power_monitors
        self.alarms_supported = alarms
        self.extensions = extensions
        self.error_extras = error_extras
        self.alarm_port = 0
        """The TCP port the alarm connection is served on (0: not served)."""
        self.power_query_max_ports = POWER_QUERY_MAX_PORTS  # in the Polatis form
        self.model_name = model_name or (polatis_model(size) if polatis
                                         else f"LCOCS-{size}x{size}")
        self.ambient_celsius = ambient_celsius
        self.heater_on = True
        self.boot_seconds = boot_seconds
        self.nvram_path = nvram_path
        self.faults.handle("reboot", self._fault_reboot)
        self.faults.handle("port", self._fault_port, self._clear_port_fault)
        self.faults.handle("engine", self._fault_engine, self._clear_engine_fault)
        self.engine_fault = False
        # (device time, fault bits from then on): a fault that came and went between two
        # status reads still latches its QUEStionable event
        self._fault_history: deque[tuple[float, int]] = deque([(self.clock.now(), 0)],
                                                              maxlen=256)
        self._rng = random.Random(f"{self.serial}/repeat")
        table_rng = random.Random(f"{self.serial}/factory")
        self._factory_il = _factory_losses(table_rng, size)
        self._crosstalk = [crosstalk_db - 3.0 * table_rng.random() for _ in range(size)]
        self._monitor_offset = [table_rng.uniform(-0.5, 0.5) for _ in range(2 * size)]
        self._noise = random.Random(f"{self.serial}/noise")
        self._detector_noise = random.Random(f"{self.serial}/los")
        self.alarms = LosAlarms(self)
        self.map_listeners: list[Callable[[], None]] = []
        """Called, with the lock held (they must not block), whenever the map changes:
        a command, a factory reset, a power loss that empties it, a boot that restores
        it (the alarm connection announces it: emulators/ocs/alarm_server.py)."""
        self._paths = _Paths()
        self._gone: dict[int, deque[_GonePath]] = {}  # by egress port
        self._transitions: deque[float] = deque(maxlen=1024)  # commands and completions
        self._disabled: set[int] = set()
        self._failed: set[int] = set()
        self.boot_mode = "restore"
        self.busy_until = self.clock.now()
        self._reconfigurations: deque[tuple[float, float]] = deque(maxlen=16)  # (done, took)
        self._powered_since = self.clock.now() - 10 * CELL_WARMUP_SECONDS  # starts warm
        self._down_until: float | None = None
        self._pending_boot_power_loss = False
        self._saved: dict[str, object] | None = None
        self._load_nvram()
        if self.boot_mode == "dark":
            self._paths.clear()
        self._engine = _OcsEngine(self)
        optics.add(self._engine)

    def _light_changed(self, at: float | None = None,
                       egress: Iterable[int] | None = None, *,
                       again_at: float | None = None) -> None:
        """Tell the optical model that the light through the switch changed now (or will
        at device time ``at``), and again at ``again_at`` if given: on the ``egress``
        ports and their neighbours (crosstalk), or on any port when ``None``."""
        if egress is None:
            self._engine.changed(at, again_at=again_at)
            return
        touched = {n for port in egress for n in self.lit_by_beam_at(port)}
        self._engine.changed(at, [str(port) for port in sorted(touched)], again_at=again_at)

    def lit_by_beam_at(self, egress: int) -> list[int]:
        """The egress ports a beam landing on ``egress`` lights: it and its two
        neighbours (crosstalk), within the egress range."""
        low, high = self.size + 1, 2 * self.size
        return [n for n in (egress - 1, egress, egress + 1) if low <= n <= high]

    # ---- factory data --------------------------------------------------------------

    def factory_loss_db(self, ingress: int, egress: int) -> float:
        loss: float = self._factory_il[ingress - 1][egress - self.size - 1]
        return loss

    # ---- ports ------------------------------------------------------------------

    def is_ingress(self, port: int) -> bool:
        return 1 <= port <= self.size

    def is_egress(self, port: int) -> bool:
        return self.size < port <= 2 * self.size

    def check_ports(self, ports: Iterable[int], *, want: str = "any") -> None:
        ports = ports if isinstance(ports, list | tuple | set | frozenset) else list(ports)
        if ports:  # the common case at once (a whole map's 128 ports in every command)
            low = self.size + 1 if want == "egress" else 1
            high = self.size if want == "ingress" else 2 * self.size
            if low <= min(ports) and max(ports) <= high:
                return
        for port in ports:  # the first port out of range, named
            if want == "ingress" and not self.is_ingress(port):
                raise _error(-222, f"ingress port {port} not in 1..{self.size}")
            if want == "egress" and not self.is_egress(port):
                raise _error(-222, f"egress port {port} not in {self.size + 1}..{2 * self.size}")
            if not 1 <= port <= 2 * self.size:
                raise _error(-222, f"port {port} not in 1..{2 * self.size}")

    def port_state(self, port: int) -> str:
        if port in self._failed:
            return "F"
        return "D" if port in self._disabled else "E"

    # ---- power and boot -------------------------------------------------------------

    def is_up(self) -> bool:
        with self.lock:
            self._finish_boot_if_due()
            return self._down_until is None

    def seconds_until_up(self) -> float:
        with self.lock:
            self._finish_boot_if_due()
            return 0.0 if self._down_until is None else self._down_until - self.clock.now()

    def reboot(self, *, power_loss: bool, seconds: float | None = None) -> None:
        if power_loss and self.nvram_path is not None:
            nvram.flush(self.nvram_path)  # what it saved is written before the power goes
        with self.lock:
            now = self.clock.now()
            self._down_until = now + (self.boot_seconds if seconds is None else seconds)
            self._pending_boot_power_loss = self._pending_boot_power_loss or power_loss
            if power_loss and self._paths:
                self._paths.clear()
                self._map_changed()
            self._light_changed()
            self._light_changed(self._down_until)  # the boot ends then
        for listener in list(self.power_listeners):
            listener(False)

    def _finish_boot_if_due(self) -> None:
        if self._down_until is None or self.clock.now() < self._down_until:
            return
        boot_at = self._down_until
        self._down_until = None
        self._note_faults(boot_at)
        self.power_on_status()
        self.alarms.power_on()  # the controller that judges them has restarted
        if self._pending_boot_power_loss:
            self._pending_boot_power_loss = False
            self._powered_since = boot_at
            self.busy_until = boot_at
            self._load_nvram()
            if self.boot_mode == "restore" and self._paths:
                # The restored hologram is written once the controller is up.
                wanted = {i: p.egress for i, p in self._paths.items()}
                self._paths.clear()
                self._switch_to(wanted, start=boot_at)
            else:
                self._paths.clear()
                self._save_nvram()
        self._light_changed()  # powered again, its ports as its memory keeps them

    def _fault_reboot(self, fault: Fault) -> None:
        self.reboot(power_loss=fault.power_loss, seconds=fault.seconds)

    def _fault_port(self, fault: Fault) -> None:
        target = fault.target or ""
        if not _digits(target) or not 1 <= int(target) <= 2 * self.size:
            raise FaultError(f"{self.name}: a port fault needs a port 1..{2 * self.size}, "
                             f"got {fault.target!r}")
        port = int(target)
        with self.lock:
            self._failed.add(port)
            self._note_faults(self.clock.now())
            self._light_changed()

    def _clear_port_fault(self, fault: Fault) -> None:
        with self.lock:
            self._failed.discard(int(fault.target or "0"))
            self._note_faults(self.clock.now())
            self._light_changed()

    def _fault_engine(self, fault: Fault) -> None:
        with self.lock:
            self.engine_fault = True
            self._note_faults(self.clock.now())

    def _clear_engine_fault(self, fault: Fault) -> None:
        with self.lock:
            self.engine_fault = False
            self._note_faults(self.clock.now())

    def _fault_bits(self) -> int:
        return ((QUESTIONABLE_PORT_FAILED if self._failed else 0)
                | (QUESTIONABLE_ENGINE_FAULT if self.engine_fault else 0))

    def _note_faults(self, when: float) -> None:
        self._fault_history.append((when, self._fault_bits()))

    def _check_engine(self) -> None:
        if self.engine_fault:
            raise _error(-240, "LC engine fault: the map cannot change")

    def factory_reset(self) -> None:
        """As delivered, for a lab or a test reusing one emulator: no connections and no
        switching history, every port enabled, boot mode RESTore, no faults, the cell
        warm, powered up. How it answers (reply form, monitors) is left as it is."""
        self.faults.clear()
        with self.lock:
            now = self.clock.now()
            self._down_until = None
            self._pending_boot_power_loss = False
            if self._paths:
                self._paths.clear()
                self._map_changed()
            self._gone.clear()
            self._transitions.clear()
            self._reconfigurations.clear()
            self._disabled.clear()
            self._failed.clear()
            self.engine_fault = False
            self._fault_history = deque([(now, 0)], maxlen=self._fault_history.maxlen)
            self.heater_on = True
            self._powered_since = now - 10 * CELL_WARMUP_SECONDS
            self.busy_until = now
            self.boot_mode = "restore"
            self.alarms.factory_reset()
            self._save_nvram()
            self._light_changed()

    # ---- what the common commands and status registers report ---------------------------

    def model(self) -> str:
        return self.model_name

    def reset(self) -> None:
        """``*RST`` drops every connection."""
        self.disconnect_all()

    def self_test(self) -> int:
        with self.lock:
            self._finish_boot_if_due()
            return ((SELF_TEST_FAULTS["port failed"] if self._failed else 0)
                    + (SELF_TEST_FAULTS["LC engine fault"] if self.engine_fault else 0))

    def operation_conditions(self) -> ConditionSource:
        return _Settling(self)

    def questionable_conditions(self) -> ConditionSource:
        return _Questionable(self)

    def settling_at(self, when: float) -> bool:
        """Whether a reconfiguration is running at device time ``when``."""
        with self.lock:
            return any(done - took <= when < done for done, took in self._reconfigurations)

    def reconfiguration_edges(self, start: float, end: float) -> list[float]:
        """Starts and ends of reconfigurations in ``(start, end]``."""
        with self.lock:
            edges = {edge for done, took in self._reconfigurations for edge in (done - took, done)}
        return sorted(t for t in edges if start < t <= end)

    def questionable_at(self, when: float) -> int:
        """QUEStionable condition bits at device time ``when`` (now or the recent past)."""
        with self.lock:
            self._finish_boot_if_due()
            cold = (CELL_SETPOINT_CELSIUS - self.cell_temperature_at(when)
                    > TEMPERATURE_QUESTIONABLE_BELOW_CELSIUS)
            faults = self._fault_history[0][1]
            for moment, bits in self._fault_history:
                if moment > when:
                    break
                faults = bits
            return (QUESTIONABLE_TEMPERATURE if cold else 0) | faults

    def questionable_edges(self, start: float, end: float) -> list[float]:
        with self.lock:
            times = {moment for moment, _ in self._fault_history}
            gap = CELL_SETPOINT_CELSIUS - self.ambient_celsius
            if self.heater_on and gap > TEMPERATURE_QUESTIONABLE_BELOW_CELSIUS:
                # the warm-up curve crosses the threshold once per power-on
                times.add(self._powered_since + CELL_WARMUP_SECONDS * math.log(
                    gap / TEMPERATURE_QUESTIONABLE_BELOW_CELSIUS))
        return sorted(t for t in times if start < t <= end)

    # ---- LC engine physics ------------------------------------------------------------

    def cell_temperature_celsius(self) -> float:
        with self.lock:
            self._finish_boot_if_due()
            return self.cell_temperature_at(self.clock.now())

    def cell_temperature_at(self, when: float) -> float:
        """The cell temperature at device time ``when`` since the last power-on, degC."""
        with self.lock:
            if not self.heater_on:
                return self.ambient_celsius
            elapsed = max(0.0, when - self._powered_since)
            gap = CELL_SETPOINT_CELSIUS - self.ambient_celsius
            return CELL_SETPOINT_CELSIUS - gap * math.exp(-elapsed / CELL_WARMUP_SECONDS)

    def switching_seconds(self) -> float:
        """How long one reconfiguration takes at the present cell temperature."""
        cooling = 40.0 - self.cell_temperature_celsius()
        response: float = LC_RESPONSE_AT_40C_SECONDS * 2.0 ** (cooling / 10.0)
        return 3.0 * response + HOLOGRAM_LOAD_SECONDS

    def _switch_to(self, wanted: dict[int, int], *, start: float | None = None) -> None:
        """Make the map exactly ``wanted``; changed paths settle after one reconfiguration."""
        self._finish_boot_if_due()
        changed = {i for i, e in wanted.items()
                   if i not in self._paths or self._paths[i].egress != e}
        removed = set(self._paths) - set(wanted)
        if not changed and not removed:
            return
        if start is None:  # from when the command reached the unit (emulators/clock.py)
            start = command_time(self.clock)
        begin = max(start, self.busy_until)
        duration = self.switching_seconds() * self._rng.uniform(0.95, 1.05)
        done = begin + duration
        leaving = removed | (changed & set(self._paths))  # beams removed or re-pointed
        touched = {self._paths[i].egress for i in leaving} | {wanted[i] for i in changed}
        # The beams leave when the reconfiguration begins, as the new ones land at its
        # end: both on the unit's own time, not when the emulator got round to the
        # command (on a loaded host that came up to 30 ms later, and a meter logging
        # the switch saw the old light go out that much late: a switch of a few ms).
        for ingress in leaving:
            self._remember_gone(ingress, self._paths[ingress], begin)
        for ingress in removed:
            del self._paths[ingress]
        for ingress in changed:
            egress = wanted[ingress]
            repeat = max(-0.1, min(0.1, self._rng.gauss(0.0, 0.03)))
            loss = self.factory_loss_db(ingress, egress) + repeat
            self._paths[ingress] = _Path(egress, done, loss)
        self.busy_until = done
        self._transitions.extend((begin, done))
        self._reconfigurations.append((done, duration))
        self._save_nvram()
        # removed and re-pointed beams are dark from begin, the new ones light up at done
        self._light_changed(egress=touched, again_at=done)
        self._map_changed()

    def _map_changed(self) -> None:
        for listener in list(self.map_listeners):
            listener()

    def _remember_gone(self, ingress: int, path: _Path, removed_at: float) -> None:
        gone = self._gone.setdefault(path.egress, deque())
        gone.append(_GonePath(ingress, path, removed_at))  # in order of removal
        while gone and gone[0].removed_at < removed_at - PATH_HISTORY_SECONDS:
            gone.popleft()

    def transition_times(self, start: float, end: float) -> list[float]:
        """Device times in ``(start, end]`` at which a beam settled or was removed."""
        with self.lock:
            times = {p.lit_at for p in self._paths.values()}
            times.update(self._transitions)
            return sorted(t for t in times if start < t <= end)

    def path_loss_db(self, ingress: int) -> float | None:
        """The insertion loss of the connection from ``ingress`` as it landed (factory value
        plus this connection's repeatability offset); ``None`` when not connected."""
        with self.lock:
            path = self._paths.get(ingress)
            return None if path is None else path.loss_db

    @property
    def last_switch_seconds(self) -> float | None:
        """Duration of the last *completed* reconfiguration (one in progress does not count)."""
        with self.lock:
            now = self.clock.now()
            done = [took for finished, took in self._reconfigurations if finished <= now]
            return done[-1] if done else None

    # ---- operations the SCPI handlers call ------------------------------------------------

    def connection_map(self) -> dict[int, int]:
        with self.lock:
            self._finish_boot_if_due()
            return {i: p.egress for i, p in sorted(self._paths.items())}

    def pending_until(self) -> float:
        with self.lock:
            self._finish_boot_if_due()
            return self.busy_until

    def _check_pairs(self, ingress: tuple[int, ...], egress: tuple[int, ...]) -> dict[int, int]:
        if len(ingress) != len(egress):
            raise _error(-109, "ingress and egress lists differ in length")
        self.check_ports(ingress, want="ingress")
        self.check_ports(egress, want="egress")
        if len(set(ingress)) != len(ingress) or len(set(egress)) != len(egress):
            raise _error(-221, "a port appears twice")
        for port in (*ingress, *egress):
            if port in self._failed:
                raise _error(201, f"port {port}")
        return dict(zip(ingress, egress, strict=True))

    def add(self, ingress: tuple[int, ...], egress: tuple[int, ...]) -> None:
        with self.lock:
            pairs = self._check_pairs(ingress, egress)
            self._check_engine()
            current = self.connection_map()
            used_egress = {e: i for i, e in current.items()}
            for i, e in pairs.items():
                if current.get(i, e) != e:
                    raise _error(202, f"ingress {i} is connected to {current[i]}")
                if used_egress.get(e, i) != i:
                    raise _error(202, f"egress {e} is connected to {used_egress[e]}")
            self._switch_to({**current, **pairs})

    def only(self, ingress: tuple[int, ...], egress: tuple[int, ...]) -> None:
        with self.lock:
            pairs = self._check_pairs(ingress, egress)
            self._check_engine()
            self._switch_to(pairs)

    def subtract(self, ports: Iterable[int]) -> None:
        with self.lock:
            ports = set(ports)
            self.check_ports(ports)
            self._check_engine()
            keep = {i: e for i, e in self.connection_map().items()
                    if i not in ports and e not in ports}
            self._switch_to(keep)

    def disconnect_all(self) -> None:
        with self.lock:
            self._check_engine()
            self._switch_to({})

    def set_enabled(self, ports: Iterable[int], enabled: bool) -> None:
        with self.lock:
            ports = list(ports)
            self.check_ports(ports)
            for port in ports:
                if port in self._failed:
                    raise _error(201, f"port {port}")
            for port in ports:
                (self._disabled.discard if enabled else self._disabled.add)(port)
            self._save_nvram()
            self._light_changed()

    def set_boot_mode(self, mode: str) -> None:
        with self.lock:
            self.boot_mode = mode
            self._save_nvram()

    def connected_to(self, port: int) -> int:
        with self.lock:
            self.check_ports([port])
            self._finish_boot_if_due()
            for ingress, path in self._paths.items():
                if ingress == port:
                    return path.egress
                if path.egress == port:
                    return ingress
            return 0

    def monitor_dbm(self, port: int) -> float | None:
        """What the port's power monitor reads now; ``None`` for a failed port."""
        return self._readings([port], self._noise)[0]

    def monitor_dbms(self, ports: list[int]) -> list[float | None]:
        """:meth:`monitor_dbm` of each of ``ports``, read in one sweep (one instant)."""
        return self._readings(ports, self._noise)

    def detector_dbm(self, port: int) -> float | None:
        """What the loss-of-light detector reads on ``port`` now: the monitor's photodiode,
        with noise of its own; ``None`` for a failed port."""
        return self._readings([port], self._detector_noise)[0]

    def detector_dbms(self, ports: list[int]) -> list[float | None]:
        """:meth:`detector_dbm` of each of ``ports``, read in one sweep (one instant)."""
        return self._readings(ports, self._detector_noise)

    def _readings(self, ports: list[int], noise: random.Random) -> list[float | None]:
        self.check_ports(ports)
        with self.lock:
            # Ingress monitors tap the fiber before the shutter: they see light
            # arriving even on a disabled port, which the safety rules rely on.
            live = [p for p in ports if p not in self._failed]
            true = dict(zip(live, self.optics.powers_dbm(f"{self.name}:{p}" for p in live),
                            strict=True))
            readings: list[float | None] = []
            for port in ports:
                if port in self._failed:
                    readings.append(None)
                    continue
                reading = true[port]
                if reading < FLOOR_MATTERS_BELOW_DBM:
                    floor = MONITOR_FLOOR_DBM + noise.gauss(0.0, 0.3)
                    reading = dbm_sum([reading, floor])
                reading += self._monitor_offset[port - 1] + noise.gauss(0.0, 0.02)
                readings.append(round(min(reading, MONITOR_MAX_DBM), 2))
            return readings

    # ---- the optical element -------------------------------------------------------------

    def egress_power_dbm(self, egress: int, input_power: InputPower, now: float) -> float:
        self._finish_boot_if_due()  # a boot completes when it is due, not when someone asks
        if egress in self._failed or egress in self._disabled:
            return NO_LIGHT_DBM
        if self._down_until is not None and self._pending_boot_power_loss:
            return NO_LIGHT_DBM  # without power the LC cells relax; a warm restart holds them
        contributions: list[float] = []
        for landing in (egress - 1, egress, egress + 1):
            ingress = self._paths.feeding.get(landing)
            if ingress is None:
                continue
            path = self._paths[ingress]
            if now < path.lit_at or ingress in self._failed or ingress in self._disabled:
                continue
            power = input_power(str(ingress)) - path.loss_db
            if landing != egress:
                power += self._crosstalk[ingress - 1]
            contributions.append(power)
        # Asked about the past (a logging instrument): connections removed since then.
        for port in (egress - 1, egress, egress + 1):
            for gone in reversed(self._gone.get(port, ())):
                if gone.removed_at <= now:
                    break  # removed before the moment asked about, as is all before it
                if now < gone.path.lit_at:
                    continue
                if gone.ingress in self._failed or gone.ingress in self._disabled:
                    continue
                power = input_power(str(gone.ingress)) - gone.path.loss_db
                if port != egress:
                    power += self._crosstalk[gone.ingress - 1]
                contributions.append(power)
        return dbm_sum(contributions)

    # ---- non-volatile memory ------------------------------------------------------------

    def _nvram(self) -> dict[str, object]:
        return {
            "boot_mode": self.boot_mode,
            "map": {str(i): p.egress for i, p in sorted(self._paths.items())},
            "disabled": sorted(self._disabled),
            "alarms": self.alarms.settings(),
        }

    def save_settings(self) -> None:
        """Write the unit's settings (map, ports, boot mode, alarms) to non-volatile
        memory."""
        with self.lock:
            self._save_nvram()

    def _save_nvram(self) -> None:
        self._saved = self._nvram()
        if self.nvram_path is not None:
            nvram.save(self.nvram_path, self._saved)  # its file follows (emulators/ocs/nvram.py)

    def _load_nvram(self) -> None:
        saved = self._saved
        if self.nvram_path is not None:
            nvram.flush(self.nvram_path)
            if self.nvram_path.exists():
                try:
                    saved = json.loads(self.nvram_path.read_text())
                except (OSError, ValueError):
                    saved = None  # a corrupt NVRAM boots dark, as real units do
        if not saved:
            return
        try:  # valid JSON of the wrong shape is as corrupt as a torn write
            boot_mode = str(saved.get("boot_mode", "restore"))
            disabled = saved.get("disabled", [])
            disabled_ports = {int(p) for p in disabled} if isinstance(disabled, list) else set()
            stored = saved.get("map", {})
            stored_map = ({int(i): int(e) for i, e in stored.items()}
                          if isinstance(stored, dict) else {})
            if (boot_mode not in ("restore", "dark")
                    or not all(1 <= p <= 2 * self.size for p in disabled_ports)
                    or not all(self.is_ingress(i) and self.is_egress(e)
                               for i, e in stored_map.items())
                    or len(set(stored_map.values())) != len(stored_map)):
                raise ValueError("NVRAM contents out of range")
        except (AttributeError, TypeError, ValueError):
            return
        self.boot_mode = boot_mode
        self._disabled = disabled_ports
        self.alarms.restore(saved.get("alarms"))
        now = self.clock.now()
        self._paths = _Paths({i: _Path(e, now, self.factory_loss_db(i, e))
                              for i, e in stored_map.items()})


class _Settling:
    """The OPERation condition of an OCS: SETTling while it reconfigures."""

    def __init__(self, device: OcsDevice):
        self.device = device

    def condition_at(self, when: float) -> int:
        return OPERATION_SETTLING if self.device.settling_at(when) else 0

    def condition_changes(self, start: float, end: float) -> list[float]:
        return self.device.reconfiguration_edges(start, end)


class _Questionable:
    """The QUEStionable condition of an OCS: cold cell, failed port, engine fault."""

    def __init__(self, device: OcsDevice):
        self.device = device

    def condition_at(self, when: float) -> int:
        return self.device.questionable_at(when)

    def condition_changes(self, start: float, end: float) -> list[float]:
        return self.device.questionable_edges(start, end)


class _OcsEngine(Element):
    """The switch as the optical model sees it: inputs ``1..N``, outputs ``N+1..2N``.
    Steady: every change of its paths, ports and power is announced (a beam's light at
    the time it settles, a boot's end at the time it is due)."""

    steady = True

    def __init__(self, device: OcsDevice):
        super().__init__(device.name)
        self.device = device
        self._inputs = [str(p) for p in range(1, device.size + 1)]
        self._outputs = [str(p) for p in range(device.size + 1, 2 * device.size + 1)]
        self._input_set = frozenset(self._inputs)

    def input_ports(self) -> Iterable[str]:
        return self._input_set

    def output_ports(self) -> Iterable[str]:
        return self._outputs

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        return self.device.egress_power_dbm(int(port), input_power, now)

    def feeds(self, input_port: str) -> Iterable[str]:
        """The egress port an ingress port is connected to and its two neighbours (the
        crosstalk reaches them); none while it is not connected."""
        path = self.device._paths.get(int(input_port))
        if path is None:
            return ()
        return [str(n) for n in self.device.lit_by_beam_at(path.egress)]

    def change_times(self, start: float, end: float) -> Iterable[float]:
        return self.device.transition_times(start, end)
