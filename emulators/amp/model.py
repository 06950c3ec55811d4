"""Model of a pluggable EDFA amplifier module (QSFP-DD shell, CMIS 5.2).

What is modelled, and why:

- The optical element: input port ``in``, output port ``out``. Output is
  input plus the actual gain, plus ASE (see :mod:`emulators.amp.edfa`),
  never above output_power_max nor above what the working pumps can deliver
  (saturation). With the pump off (low power, ALS shutdown, output disabled,
  pump failure) the unpumped coil absorbs and the output shutter closes: no
  light leaves.
- Gain control: in constant-gain mode the loop aims at target_gain, in
  constant-output-power mode at target_output_power minus the input. A
  required gain outside [gain_min, gain_max] is clamped and flagged
  gain_out_of_range, as is an output that saturation leaves more than 0.5 dB
  short. The loop settles to its aim with a first-order time constant of
  20 ms, so a step in target gain shows up over about 100 ms, and after the
  pump turns on the gain climbs from transparency (0 dB). Tilt is a set
  point: actual_tilt follows target_tilt, clamped to the tilt range.
- Monitors (vendor page B0h): input and output power in 0.01 dBm with a
  -40.00 dBm floor (a dark port reads the floor, never -inf), a fixed
  calibration offset within +-0.1 dB and 0.01 dB reading noise; pump
  currents (about 300 mA per pump at +20 dBm out, 400 mA driver limit);
  pump temperature (TEC-held 25 degC, warming above 300 mA); back-reflection
  (-40 dB by default, relative to the output; no reading while dark).
- ALS (:mod:`emulators.amp.als`): 500 ms LOS soak, restart pulse of 2 s at
  reduced power (+10 dBm at most) every 100 s in automatic mode, manual
  restart by command, disabled mode never shuts.
- The CMIS module state machine: byte 26 bit 4 (LowPwrRequestSW) sends a
  ready module through ModulePwrDn (60 ms) to ModuleLowPwr, pump off; clearing
  it goes through ModulePwrUp (300 ms) to ModuleReady. Page 01h byte 167
  advertises the bands that hold them (code 0x4, under 100 ms, and 0x5,
  under 500 ms). Every state change latches byte 8 bit 0. There is no LPMode
  pin, so LowPwrAllowRequestHW is stored and has no effect.
- The data path of lane 1 (:mod:`emulators.amp.datapath`): DPActivated in
  ModuleReady, DPDeactivated in every other module state, through DPInit
  (8 ms) and DPTxTurnOn (4 ms) on the way up and DPTxTurnOff (1 ms) and
  DPDeinit (4 ms) on the way down when the host sets DataPathDeinit; light
  leaves the amplifier only in DPActivated. Lanes 2-8 stay DPDeactivated.
- Tx disable (page 10h byte 130 bit 0, lane 1) shuts the output -- pump off,
  shutter closed, ALS state 4 -- whatever the data path state, which it does
  not change (CMIS 5.2 page 10h); clearing it brings the output back. The
  vendor output enable (B0h byte 146 bit 0) does the same.
- Software reset (byte 26 bit 3, self-clearing): controls back to defaults,
  page select back to 00h, latched flags cleared; the module does not
  acknowledge the bus for 50 ms, then starts again in ModuleLowPwr and goes
  through ModulePwrUp to ModuleReady.
- Module temperature about 36 degC at 30 degC ambient, warming 0.008 degC
  per mA of pump current, drifting +-0.3 degC over 15 minutes; Vcc 3.300 V
  drifting +-4 mV. Both are latched in byte 9 against the page 02h
  thresholds, and the lane 1 Rx power (the input) in page 11h bytes 149-152.
- Flags: vendor status byte 145 is live; its latched copy byte 224, byte 9
  and the lane flags of page 11h latch whenever a condition is seen (at
  every ALS or state event and before every bus transaction) and clear only
  when read; byte 8 bit 0 latches on each state change. Byte 3 bit 0 is 0
  while any unmasked latched flag is set.

Time is lazy: :meth:`AmplifierModule.update` steps from the last update to
now through every timed event in order (soak end, pulse start and end, state
durations), letting the gain loop settle in between, and assumes that the
input observed now has been there since the last update. The lab calls it
every 50 ms; tests with a stepped clock call it (or make a bus transaction)
when they change the light, and after they advance the clock.

Faults (one FaultInjector): ``nack``, ``bus_hang`` and ``corrupt`` act on the
bus (see :mod:`emulators.amp.i2c`); ``reset`` is a software reset, ``reboot``
a power cycle (``seconds`` without acknowledging, default 0.5 s); ``pump``
fails every pump (target None) or pump ``target`` ("1" or "2"). With every
pump failed the module goes to ModuleFault with fault cause 32 (byte 41, the
first custom code) and no output; pump currents read 0, and the vendor
flags show gain_out_of_range. Like any CMIS module it leaves ModuleFault
only by a reset, even once the fault is cleared. With one of two pumps
failed the module runs on the other, saturating earlier.
``back_reflection`` raises the reflection to ``target`` dB (default -15 dB),
above the -25 dB default limit.

A plain CMIS module (``vendor_page=False``, ``monitors=False``): the same amplifier
without the project's vendor page B0h (a host's select of it is refused, as for
any page the module lacks), identifying as another maker's part, and advertising
no module or lane monitor (page 01h bytes 159-160 00h: temperature, Vcc and lane 1
Rx power are neither kept in their registers nor flagged). It runs on the default
controls (constant gain 20 dB, ALS automatic), which no host can change; Tx
disable, low power, reset and the data path are CMIS and work as above.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Iterable
from dataclasses import replace

from drivers.amp import vendor_page as vendor
from drivers.cmis.codes import MODULE_STATE_CODES
from drivers.cmis.fields import LOWER
from drivers.cmis.pages import lower, page11
from emulators.amp import edfa
from emulators.amp.als import RESTART_PULSE, SHUTDOWN, Als, AlsSettings
from emulators.amp.datapath import ACTIVATED, DataPath, DataPathTimes
from emulators.amp.edfa import EdfaDesign, GainTarget
from emulators.amp.registers import (
    DEFAULTS,
    FAULT_CAUSE_PUMP,
    MONITOR_CEILING_DBM,
    MONITOR_FLOOR_DBM,
    PLAIN_PART_NUMBER,
    PLAIN_VENDOR,
    STATUS_ALS_SHUTDOWN,
    STATUS_BACK_REFLECTION_HIGH,
    STATUS_GAIN_OUT_OF_RANGE,
    STATUS_INPUT_LOS,
    STATUS_PUMP_FAILURE,
    STATUS_PUMP_OVER_CURRENT,
    STATUS_PUMP_OVER_TEMPERATURE,
    Controls,
    Identity,
    Snapshot,
    Thresholds,
    flags_rx_power,
    flags_temperature_vcc,
    has_vendor_page,
    interrupt_asserted,
    module_monitors,
    new_memory,
    read_controls,
    refuse_invalid,
    rx_power_milliwatts,
    rx_power_monitor,
    write_controls,
    write_identity,
    write_snapshot,
    write_thresholds,
)
from emulators.clock import Clock
from emulators.faults import Fault, FaultError, FaultInjector
from emulators.optics.model import NO_LIGHT_DBM, Element, InputPower, OpticalModel

LOW_PWR = MODULE_STATE_CODES["ModuleLowPwr"]
PWR_UP = MODULE_STATE_CODES["ModulePwrUp"]
READY = MODULE_STATE_CODES["ModuleReady"]
PWR_DN = MODULE_STATE_CODES["ModulePwrDn"]
FAULT = MODULE_STATE_CODES["ModuleFault"]

ALS_PULSE_POWER_DBM = 10.0
BACK_REFLECTION_FAULT_DB = -15.0
BUS_FAULTS = ("nack", "bus_hang", "corrupt")
RX_POWER_FLAGS = (page11.FLAGS_RX_POWER_HIGH_ALARM, page11.FLAGS_RX_POWER_LOW_ALARM,
                  page11.FLAGS_RX_POWER_HIGH_WARNING, page11.FLAGS_RX_POWER_LOW_WARNING)
_MAX_EVENTS_PER_UPDATE = 1_000_000


class AmplifierModule:
    """One pluggable EDFA: CMIS memory, state machine, ALS, physics, optical element."""

    def __init__(
        self,
        name: str,
        optics: OpticalModel,
        *,
        serial: str | None = None,
        gain_min_db: float = 5.0,
        gain_max_db: float = 25.0,
        output_power_max_dbm: float = 20.0,
        tilt_min_db: float = -3.0,
        tilt_max_db: float = 3.0,
        pump_count: int = 2,
        pump_current_max_ma: float = 400.0,
        part_number: str = "MSO-EDFA-C20",
        firmware: tuple[int, int] = (1, 3),
        pwr_up_seconds: float = 0.300,
        pwr_dn_seconds: float = 0.060,
        reset_seconds: float = 0.050,
        boot_seconds: float = 0.5,
        ambient_celsius: float = 30.0,
        back_reflection_db: float = -40.0,
        data_path_times: DataPathTimes | None = None,
        vendor_page: bool = True,
        monitors: bool = True,
    ):
        self.name = name
        self.serial = serial or f"MA{zlib.crc32(name.encode()) % 10**8:08d}"
        self.design = EdfaDesign(
            gain_min_db=gain_min_db, gain_max_db=gain_max_db,
            output_power_max_dbm=output_power_max_dbm, tilt_min_db=tilt_min_db,
            tilt_max_db=tilt_max_db, pump_count=pump_count,
            pump_current_max_ma=pump_current_max_ma,
        )
        self.identity = Identity(serial=self.serial, part_number=part_number, firmware=firmware) \
            if vendor_page else Identity(serial=self.serial, vendor_name=PLAIN_VENDOR,
                                         part_number=PLAIN_PART_NUMBER, firmware=firmware)
        self.vendor_page = vendor_page
        self.monitors = monitors
        self.optics = optics
        self.clock: Clock = optics.clock
        self.lock = optics.lock  # one lock with the graph: it calls us while holding it
        self.pwr_up_seconds = pwr_up_seconds
        self.pwr_dn_seconds = pwr_dn_seconds
        self.reset_seconds = reset_seconds
        self.boot_seconds = boot_seconds
        self.ambient_celsius = ambient_celsius
        self.supply_volts = 3.300
        self.back_reflection_db = back_reflection_db
        calibration = random.Random(f"{self.serial}/calibration")
        self._input_offset_db = calibration.uniform(-0.1, 0.1)
        self._output_offset_db = calibration.uniform(-0.1, 0.1)
        self._noise = random.Random(f"{self.serial}/noise")

        self.data_path_times = data_path_times or DataPathTimes()
        self.memory = new_memory(vendor_page=vendor_page)
        write_identity(self.memory, self.identity, self.design, pwr_up_seconds, pwr_dn_seconds,
                       self.data_path_times, monitors=monitors)
        write_thresholds(self.memory, Thresholds())
        write_controls(self.memory, DEFAULTS)
        self._controls: Controls = replace(DEFAULTS)

        now = self.clock.now()
        self._t = now
        self._state = READY  # plugged in long ago: powered up and ready
        self._state_until: float | None = None
        self._down_until: float | None = None
        self._fault_cause = 0
        self._als = Als()
        self._data_path = DataPath(self.data_path_times, activated=True)
        self._gain_db: float | None = None
        self._tilt_db: float | None = None
        self._pumps_ok = [True] * pump_count
        self._reflection_fault_db: float | None = None
        self._input_dbm = NO_LIGHT_DBM
        self._updating = False
        self.memory.latch(LOWER, lower.FLAGS_MODULE.offset, 0x01)  # it did become ready

        self.faults = FaultInjector(name)
        for kind in BUS_FAULTS:
            self.faults.handle(kind, self._check_no_target)
        self.faults.handle("reset", self._fault_reset)
        self.faults.handle("reboot", self._fault_reboot)
        self.faults.handle("pump", self._fault_pump, self._clear_pump)
        self.faults.handle("back_reflection", self._fault_reflection, self._clear_reflection)
        self._element = _AmplifierElement(self)
        optics.add(self._element)
        self._settle(now)

    def factory_reset(self) -> None:
        """Put the module back as the lab builds it, for a lab shared by several tests:
        faults cleared, default controls and thresholds, no latched flag but the module's
        "became ready", pumps healthy, ready as if plugged in long ago. ALS and the data
        path start over from a dark input that has lasted the LOS soak: where a new lab's
        amplifiers are half a second after the lab starts, output shut until the light
        comes back (or a host asks for a restart). Not a CMIS operation: a real module
        gets here by being swapped for a new one."""
        with self.lock:
            self.faults.clear()
            now = self.clock.now()
            write_thresholds(self.memory, Thresholds())
            write_controls(self.memory, DEFAULTS)
            self._controls = replace(DEFAULTS)
            for (page, offset), access in self.memory.access.items():
                if access.kind == "cor":
                    self.memory.poke(page, offset, b"\x00")
            self.memory.select_page_00h()
            start = now - DEFAULTS.als_los_soak_seconds
            self._t = start
            self._state = READY
            self._state_until = None
            self._down_until = None
            self._fault_cause = 0
            self._als = Als()
            self._data_path = DataPath(self.data_path_times, activated=True)
            self._gain_db = None
            self._tilt_db = None
            self._pumps_ok = [True] * len(self._pumps_ok)
            self._reflection_fault_db = None
            self._input_dbm = NO_LIGHT_DBM
            self.memory.latch(LOWER, lower.FLAGS_MODULE.offset, 0x01)
            self._settle(start)
            self._advance(now, NO_LIGHT_DBM)

    # ---- what tests and the lab look at -----------------------------------------------

    @property
    def module_state(self) -> int:
        with self.lock:
            self.update()
            return self._state

    @property
    def data_path_state(self) -> int:
        """Lane 1's data path state code (codes.DATA_PATH_STATES)."""
        with self.lock:
            self.update()
            return self._data_path.state

    @property
    def als_state(self) -> int:
        with self.lock:
            self.update()
            return self._als.state

    @property
    def gain_db(self) -> float | None:
        """The actual signal gain now; ``None`` while the pump is off."""
        with self.lock:
            self.update()
            return self._gain_db

    @property
    def input_dbm(self) -> float:
        with self.lock:
            self.update()
            return self._input_dbm

    @property
    def output_dbm(self) -> float:
        with self.lock:
            self.update()
            return self._output(self._input_dbm)[0]

    def snapshot(self) -> Snapshot:
        """The live values as the next bus transaction would show them."""
        with self.lock:
            self.update()
            return self._snapshot()

    # ---- time ---------------------------------------------------------------------------

    def update(self, now: float | None = None) -> None:
        """Bring the model up to ``now`` (default: the clock), observing the input light."""
        with self.lock:
            if self._updating:
                return  # the graph asked for our output while we looked at our input
            self._updating = True
            try:
                input_dbm = self.optics.power_dbm(f"{self.name}:in")
            finally:
                self._updating = False
            self._advance(self.clock.now() if now is None else now, input_dbm)

    def _advance(self, now: float, input_dbm: float) -> None:
        if self._updating:
            return
        self._updating = True
        try:
            if self.faults.is_active("reset"):
                self.faults.clear("reset")  # a reset is an event, not a state
            self._input_dbm = input_dbm
            t = self._t
            now = max(now, t)  # device time never runs backwards
            self._settle(t)
            for _ in range(_MAX_EVENTS_PER_UPDATE):
                deadline = self._deadline()
                step_to = now if deadline is None or deadline > now else max(deadline, t)
                self._integrate(step_to - t)
                t = self._t = step_to
                if deadline is None or deadline > now:
                    break
                self._settle(t)
            else:
                raise RuntimeError(f"{self.name}: too many events in one update")
            self._t = now
        finally:
            self._updating = False

    def _deadline(self) -> float | None:
        times = [self._als.deadline(self._los(), self._als_settings()),
                 self._data_path.deadline()]
        if self._down_until is not None:
            times.append(self._down_until)
        elif self._state in (PWR_UP, PWR_DN):
            times.append(self._state_until)
        due = [t for t in times if t is not None]
        return min(due) if due else None

    def _settle(self, t: float) -> None:
        """Every transition due at ``t``, then the pump and the latched flags follow."""
        for _ in range(16):
            changed = self._module_step(t)
            changed |= self._data_path.settle(
                t, module_ready=self._state == READY and self._down_until is None,
                deinit=self._controls.data_path_deinit)
            changed |= self._als.settle(t, active=self._active(), los=self._los(),
                                        settings=self._als_settings())
            if not changed:
                break
        if self._pumping():
            if self._gain_db is None:
                self._gain_db = edfa.GAIN_AT_PUMP_ON_DB
                self._tilt_db = 0.0
        else:
            self._gain_db = self._tilt_db = None
        self._latch_conditions()

    def _integrate(self, seconds: float) -> None:
        """The gain loop between events: conditions are constant over ``seconds``."""
        if seconds <= 0 or self._gain_db is None or self._tilt_db is None:
            return
        tau = self.design.settle_seconds
        self._gain_db = edfa.settle(self._gain_db, self._gain_target().gain_db, seconds, tau)
        tilt = min(max(self._controls.target_tilt_db, self.design.tilt_min_db),
                   self.design.tilt_max_db)
        self._tilt_db = edfa.settle(self._tilt_db, tilt, seconds, tau)

    # ---- module state machine ---------------------------------------------------------

    def _set_state(self, state: int, until: float | None = None) -> None:
        if state != self._state:
            self._state = state
            self.memory.latch(LOWER, lower.FLAGS_MODULE.offset, 0x01)
        self._state_until = until

    def _module_step(self, t: float) -> bool:
        if self._down_until is not None:
            if t < self._down_until:
                return False
            self._down_until = None
            self.memory.latch(LOWER, lower.FLAGS_MODULE.offset, 0x01)  # management is up
            self._set_state(LOW_PWR)
            return True
        state, low_power = self._state, self._controls.low_power_request
        until = self._state_until if self._state_until is not None else t
        if state == LOW_PWR and not low_power:
            self._set_state(PWR_UP, t + self.pwr_up_seconds)
        elif state == PWR_UP and low_power:
            self._set_state(PWR_DN, t + self.pwr_dn_seconds)
        elif state == PWR_UP and t >= until:
            self._become_ready()
        elif state == READY and low_power:
            self._set_state(PWR_DN, t + self.pwr_dn_seconds)
        elif state == READY and not any(self._pumps_ok):
            self._become_ready()
        elif state == PWR_DN and t >= until:
            self._set_state(LOW_PWR)
        else:
            return False
        return True

    def _become_ready(self) -> None:
        if any(self._pumps_ok):
            self._set_state(READY)
        else:
            self._fault_cause = FAULT_CAUSE_PUMP
            self._set_state(FAULT)

    def _reset(self, down_seconds: float) -> None:
        """Software reset or power cycle: defaults, page 00h, a pause, then power-up."""
        t = self._t
        write_controls(self.memory, DEFAULTS)
        self._controls = replace(DEFAULTS)
        for (page, offset), access in self.memory.access.items():
            if access.kind == "cor":
                self.memory.poke(page, offset, b"\x00")
        self._state = LOW_PWR
        self._state_until = None
        self._down_until = t + down_seconds
        self._fault_cause = 0
        self._settle(t)

    def _active(self) -> bool:
        """Whether the output may be lit: ready, data path activated, neither Tx disable
        nor the vendor output enable holding it dark."""
        c = self._controls
        return (self._state == READY and self._down_until is None
                and self._data_path.state == ACTIVATED and c.output_enable and not c.tx_disable)

    def _pumping(self) -> bool:
        return self._active() and self._als.pumping and any(self._pumps_ok)

    # ---- physics ------------------------------------------------------------------------

    def _los(self) -> bool:
        return self._input_dbm < self._controls.los_threshold_dbm

    def _als_settings(self) -> AlsSettings:
        c = self._controls
        return AlsSettings(mode=c.als_mode, los_soak_seconds=c.als_los_soak_seconds,
                           restart_interval_seconds=c.als_restart_interval_seconds,
                           restart_pulse_seconds=c.als_restart_pulse_seconds)

    def _gain_target(self, *, pulse_ceiling: bool = True) -> GainTarget:
        c = self._controls
        in_pulse = pulse_ceiling and self._als.state == RESTART_PULSE
        return edfa.gain_target(
            self.design, self._input_dbm, constant_power=c.constant_power,
            target_gain_db=c.target_gain_db, target_output_dbm=c.target_output_dbm,
            working_pumps=sum(self._pumps_ok),
            ceiling_dbm=ALS_PULSE_POWER_DBM if in_pulse else None,
        )

    def _output(self, input_dbm: float) -> tuple[float, list[float]]:
        """Total output (dBm) and pump currents (mA) for this input, at the present gain."""
        if self._gain_db is None:
            return NO_LIGHT_DBM, [0.0] * self.design.pump_count
        limit = self._gain_target().limit_dbm
        total = edfa.output_dbm(input_dbm, self._gain_db, limit)
        currents = edfa.pump_currents_ma(self.design, input_dbm, total, self._pumps_ok)
        return total, currents

    def _reflection_db(self, output_dbm: float) -> float | None:
        if output_dbm == NO_LIGHT_DBM:
            return None
        if self._reflection_fault_db is not None:
            return self._reflection_fault_db
        return self.back_reflection_db

    def _status(self) -> int:
        if self._down_until is not None:
            return 0
        c = self._controls
        output, currents = self._output(self._input_dbm)
        status = STATUS_INPUT_LOS if self._los() else 0
        if self._als.state in (SHUTDOWN, RESTART_PULSE):
            status |= STATUS_ALS_SHUTDOWN
        if (self._pumping() and self._als.state != RESTART_PULSE
                and self._gain_target(pulse_ceiling=False).out_of_range):
            status |= STATUS_GAIN_OUT_OF_RANGE
        if not any(self._pumps_ok) and c.output_enable and not c.low_power_request:
            status |= STATUS_GAIN_OUT_OF_RANGE
        if not all(self._pumps_ok):
            status |= STATUS_PUMP_FAILURE
        if any(i > c.pump_current_limit_ma for i in currents):
            status |= STATUS_PUMP_OVER_CURRENT
        hottest = edfa.pump_temperature_celsius(self.design, max(currents))
        if hottest > c.pump_temperature_limit_celsius:
            status |= STATUS_PUMP_OVER_TEMPERATURE
        reflection = self._reflection_db(output)
        if reflection is not None and reflection > c.back_reflection_limit_db:
            status |= STATUS_BACK_REFLECTION_HIGH
        return status

    def _latch_conditions(self) -> None:
        status = self._status()
        if has_vendor_page(self.memory):
            self.memory.latch(vendor.PAGE, vendor.AMP_FLAGS.offset, status)
        if status & STATUS_INPUT_LOS:
            self.memory.latch(page11.P, page11.FLAGS_RX_LOS.offset, 0x01)
        if not all(self._pumps_ok) and self._down_until is None:
            self.memory.latch(page11.P, page11.FLAGS_TX_FAULT.offset, 0x01)

    def _temperature_celsius(self, currents: Iterable[float]) -> float:
        drift = 0.3 * math.sin(2 * math.pi * self._t / 900.0)
        return (self.ambient_celsius + 6.0 + 0.008 * sum(currents) + drift
                + self._noise.gauss(0.0, 0.02))

    def _vcc_volts(self) -> float:
        drift = 0.004 * math.sin(2 * math.pi * self._t / 1300.0 + 1.0)
        return self.supply_volts + drift + self._noise.gauss(0.0, 0.0005)

    def _monitor(self, dbm: float, offset: float) -> float:
        reading = dbm + offset + self._noise.gauss(0.0, 0.01)
        return min(max(reading, MONITOR_FLOOR_DBM), MONITOR_CEILING_DBM)

    def _snapshot(self) -> Snapshot:
        output, currents = self._output(self._input_dbm)
        pumping = self._gain_db is not None
        reflection = self._reflection_db(output)
        return Snapshot(
            module_state=self._state,
            interrupt=interrupt_asserted(self.memory),
            fault_cause=self._fault_cause,
            temperature_celsius=self._temperature_celsius(currents),
            vcc_volts=self._vcc_volts(),
            input_dbm=self._monitor(self._input_dbm, self._input_offset_db),
            output_dbm=self._monitor(output, self._output_offset_db),
            gain_db=(self._gain_db or 0.0) + self._noise.gauss(0.0, 0.01) if pumping else None,
            tilt_db=self._tilt_db if pumping else None,
            pump_currents_ma=(currents[0], currents[1] if len(currents) > 1 else 0.0),
            pump_temperature_celsius=edfa.pump_temperature_celsius(self.design, max(currents))
            + self._noise.gauss(0.0, 0.02),
            back_reflection_db=None if reflection is None
            else reflection + self._noise.gauss(0.0, 0.05),
            als_state=self._als.state,
            status=self._status(),
            data_path_state=self._data_path.state,
        )

    # ---- the bus side (the I2C slave calls these, one transaction at a time) ----------------

    def acknowledges(self) -> bool:
        """Whether the module answers its address now (not while it resets)."""
        with self.lock:
            self.update()
            return self._down_until is None

    def _refresh(self) -> None:
        self.update()
        snap = self._snapshot()
        if module_monitors(self.memory):
            self.memory.latch(LOWER, lower.FLAGS_TEMP_VCC.offset,
                              flags_temperature_vcc(self.memory, snap.temperature_celsius,
                                                    snap.vcc_volts))
        if rx_power_monitor(self.memory):
            rx_flags = flags_rx_power(self.memory, rx_power_milliwatts(snap.input_dbm))
            for flag, bit in zip(RX_POWER_FLAGS, rx_flags, strict=True):
                self.memory.latch(page11.P, flag.offset, bit)
        write_snapshot(self.memory, replace(snap, interrupt=interrupt_asserted(self.memory)))

    def host_read(self, offset: int, length: int) -> bytes:
        with self.lock:
            self._refresh()
            return self.memory.host_read(offset, length)

    def host_write(self, offset: int, data: bytes) -> None:
        with self.lock:
            self._refresh()
            written = self.memory.host_write(offset, data)
            if (LOWER, lower.MODULE_CONTROL.offset) in written.stored \
                    and self.memory.raw(lower.MODULE_CONTROL) & lower.SOFTWARE_RESET:
                self._reset(self.reset_seconds)
                return
            refuse_invalid(self.memory, self._controls)
            self._controls = read_controls(self.memory)
            command = written.commands.get((vendor.PAGE, vendor.ALS_COMMAND.offset), 0)
            if command & vendor.ALS_RESTART_NOW:
                self._als.restart(self._t, self._als_settings())
            # Page 10h ApplyDPInit is accepted: lane 1 has no staged settings to apply.
            self._settle(self._t)
            self._refresh()

    # ---- faults -------------------------------------------------------------------------

    def _check_no_target(self, fault: Fault) -> None:
        if fault.target is not None:
            raise FaultError(f"{self.name}: a {fault.kind} fault takes no target")

    def _fault_reset(self, fault: Fault) -> None:
        self._check_no_target(fault)
        with self.lock:
            self.update()
            self._reset(self.reset_seconds)

    def _fault_reboot(self, fault: Fault) -> None:
        self._check_no_target(fault)
        seconds = self.boot_seconds if fault.seconds is None else fault.seconds
        if seconds < 0:
            raise FaultError(f"{self.name}: a reboot takes seconds >= 0")
        with self.lock:
            self.update()
            self._reset(seconds)

    def _pumps_of(self, fault: Fault) -> list[int]:
        if fault.target is None:
            return list(range(self.design.pump_count))
        count = self.design.pump_count
        if fault.target not in {str(n) for n in range(1, count + 1)}:
            raise FaultError(f"{self.name}: a pump fault needs no target or a pump 1..{count}, "
                             f"got {fault.target!r}")
        return [int(fault.target) - 1]

    def _fault_pump(self, fault: Fault) -> None:
        pumps = self._pumps_of(fault)
        with self.lock:
            self.update()
            for pump in pumps:
                self._pumps_ok[pump] = False
            self._settle(self._t)
        # The output falls at once (or saturates lower): told now, not at the next tick of
        # whoever steps the module; outside the module's lock, listeners may read power.
        self._element.changed()

    def _clear_pump(self, fault: Fault) -> None:
        with self.lock:
            self.update()
            for pump in self._pumps_of(fault):
                self._pumps_ok[pump] = True
            self._settle(self._t)
        self._element.changed()

    def _fault_reflection(self, fault: Fault) -> None:
        level = BACK_REFLECTION_FAULT_DB
        if fault.target is not None:
            try:
                level = float(fault.target)
            except ValueError:
                level = math.nan
            if not -60.0 <= level <= 0.0:
                raise FaultError(f"{self.name}: a back_reflection fault takes a level in dB "
                                 f"-60..0, got {fault.target!r}")
        with self.lock:
            self.update()
            self._reflection_fault_db = level
            self._settle(self._t)

    def _clear_reflection(self, fault: Fault) -> None:
        with self.lock:
            self.update()
            self._reflection_fault_db = None

    # ---- the optical element ----------------------------------------------------------------

    def output_power_dbm(self, input_dbm: float, now: float) -> float:
        """Power leaving ``out`` at ``now`` for this input (the optical model asks)."""
        with self.lock:
            self._advance(max(now, self._t), input_dbm)
            return self._output(input_dbm)[0]


class _AmplifierElement(Element):
    def __init__(self, module: AmplifierModule):
        super().__init__(module.name)
        self.module = module

    def input_ports(self) -> Iterable[str]:
        return ("in",)

    def output_ports(self) -> Iterable[str]:
        return ("out",)

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        if port != "out":
            raise KeyError(port)
        return self.module.output_power_dbm(input_power("in"), now)


__all__ = ["FAULT", "LOW_PWR", "PWR_DN", "PWR_UP", "READY", "AmplifierModule"]
