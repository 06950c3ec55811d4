"""Persistent device sessions for the protection controller.

Detection has to be a fast poll, not a connect: every device keeps its connection
open for the whole run, and one thread per device reads it.

- :class:`OcsWatch` reads an OCS's power monitors on every port the protected links
  use and on the ports that feed them: one ``:PMON:POW?`` query per poll (per 256
  ports) covering every watched link, however many; its map every
  :data:`MAP_EVERY_SECONDS`, or when asked. How often it polls follows from the OCS's
  message budget (msoctl/protect/budget.py): fast while it watches for this
  instance's links, slow (:data:`SLOW_POLL_SECONDS`, a reconciliation) while it only
  keeps a standby warm or while the OCS's alarms do the detecting. Each watch's
  reconciliation polls keep to a phase of their own within the interval, so an
  instance's OCSes are read one after another, not in one burst. It has a second
  persistent session, :class:`OcsControl`, for changes, so a protection move never
  queues behind a monitor read; both take their messages from the same budget.
- :class:`AmpWatch` reads an amplifier's monitors and ALS state (two I2C block reads
  through its bridge), and carries out requests (an ALS restart) between reads: the
  bus is one conversation at a time.

A device that fails is closed and opened again, with a back-off from
:data:`RECONNECT_MIN_SECONDS` doubling to :data:`RECONNECT_MAX_SECONDS`. Its last
sample stays readable with the time it was taken, so the controller knows how old
its view is; ``down_since`` and ``error`` say what went wrong.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis import codes
from drivers.cmis.pages import lower
from drivers.errors import DeviceError
from drivers.ocs import OcsDriver
from drivers.ocs.alarms import map_digest
from drivers.scpi.session import Pending
from msoctl.protect.budget import BudgetedTransport, QueryBudget, poll_interval
from msoctl.protect.light import AmpReading

MAP_EVERY_SECONDS = 1.0
"""The map is read this often while polling fast (after a change of ours at once)."""
SLOW_POLL_SECONDS = 1.0
"""A reconciliation poll: a warm standby's, or with the OCS's alarms detecting."""
SLOW_MAP_EVERY_SECONDS = 5.0
HELD_SECONDS = 0.02
"""How often a reconciliation held back by a change in flight looks again."""
RECONNECT_MIN_SECONDS = 0.05
RECONNECT_MAX_SECONDS = 1.0
AMP_FIELDS = (lower.MODULE_STATE, vp.INPUT_POWER, vp.OUTPUT_POWER, vp.ACTUAL_GAIN,
              vp.ALS_STATE, vp.AMP_STATUS, vp.TARGET_GAIN)

OcsOpener = Callable[[str], OcsDriver]
AmpOpener = Callable[[str], AmpDriver]
T = TypeVar("T")
D = TypeVar("D", OcsDriver, AmpDriver)


@dataclass(frozen=True)
class OcsSample:
    taken: float  # monotonic seconds, when the reply arrived
    powers: dict[int, float | None]
    port_map: dict[int, int] | None
    map_taken: float | None
    asked: float = 0.0  # monotonic seconds, just before the power query left


def budgeted_opener(opener: OcsOpener, budget: QueryBudget, *,
                    urgent: bool | Callable[[], bool],
                    stop: threading.Event | None = None) -> OcsOpener:
    """``opener`` whose drivers take every message they send from ``budget`` (what a
    driver sends as it opens included: ``*CLS`` and, on a new session, what it asks to
    learn the unit's features)."""

    def open_budgeted(name: str) -> OcsDriver:
        budget.take(OcsDriver.OPEN_MESSAGES, urgent=urgent, stop=stop)
        driver = opener(name)
        session = driver.session
        session.transport = BudgetedTransport(  # type: ignore[assignment]
            session.transport, budget, session.write_termination, urgent=urgent, stop=stop)
        return driver

    return open_budgeted


class _Session(Generic[D]):
    """One persistent connection to a device: opened on first use, closed on failure."""

    def __init__(self, name: str, opener: Callable[[str], D]):
        self.name = name
        self._opener: Callable[[str], D] = opener
        self._driver: D | None = None
        self.lock = threading.Lock()

    def driver(self) -> D:
        if self._driver is None:
            self._driver = self._opener(self.name)
        return self._driver

    def drop(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            try:
                driver.close()
            except Exception:  # closing a broken connection must not hide why it broke
                pass


class OcsControl(_Session[OcsDriver]):
    """The session that changes an OCS. Every call is safe to repeat (a map read, a
    whole-map replace), so a call that fails on a broken connection is made once more
    on a fresh one."""

    def call(self, action: Callable[[OcsDriver], T]) -> T:
        with self.lock:
            try:
                return action(self.driver())
            except DeviceError:
                self.drop()
            return action(self.driver())

    def start(self, begin: Callable[[OcsDriver], Pending[T]]) -> Pending[T]:
        """``begin(driver)``: a request that leaves now, in this thread, and whose replies
        are read by the returned request's ``finish()``, in this thread or another; the
        session is the request's until then. As with :meth:`call`, a request that fails
        on a broken connection is made once more, whole, on a fresh one: at once when
        the sending fails, in ``finish()`` when the reading does."""
        self.lock.acquire()
        retried = False
        try:
            try:
                pending = begin(self.driver())
            except DeviceError:
                self.drop()
                retried = True
                pending = begin(self.driver())
        except BaseException:
            self.lock.release()
            raise

        def finish() -> T:
            try:
                try:
                    return pending.finish()
                except DeviceError:
                    if retried:
                        raise
                    self.drop()
                return begin(self.driver()).finish()
            finally:
                self.lock.release()

        def abandon() -> None:
            try:
                pending.abandon()
            finally:
                self.lock.release()

        return Pending(finish, abandon)

    def warm(self) -> None:
        """Open the session now, so the first move does not pay for the connect."""
        try:
            self.call(lambda driver: driver.size)
        except DeviceError:
            pass  # the watch reports the device; the next move tries again


class _Watch(threading.Thread, Generic[D]):
    """A thread that polls one device until stopped."""

    def __init__(self, name: str, opener: Callable[[str], D], *, poll_seconds: float,
                 notify: Callable[[], None]):
        super().__init__(name=f"protect-{name}", daemon=True)
        self.device = name
        self.session: _Session[D] = _Session(name, opener)
        self.poll_seconds = poll_seconds
        self.notify = notify
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self.error: str | None = None
        self.down_since: float | None = None
        self._backoff = RECONNECT_MIN_SECONDS

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                if self.poll(self.session.driver()) is False:  # held back: nothing to tell
                    self._sleep(max(0.0, self.next_poll(started) - time.monotonic()))
                    continue
            except DeviceError as error:
                self.session.drop()
                if self.down_since is None:
                    self.down_since = started
                # the watch's device is named by whoever shows this: name it once
                said = error.message if error.device in (None, self.device) else str(error)
                self.error = f"{type(error).__name__}: {said}"
                self.notify()
                self._sleep(self._backoff)
                self._backoff = min(self._backoff * 2, RECONNECT_MAX_SECONDS)
                continue
            except Exception as error:  # a bug must not end the watch: report, go on
                self.error = f"internal error: {type(error).__name__}: {error}"
                self.notify()
                self._sleep(RECONNECT_MAX_SECONDS)
                continue
            self.down_since = self.error = None
            self._backoff = RECONNECT_MIN_SECONDS
            self.notify()
            self._sleep(max(0.0, self.next_poll(started) - time.monotonic()))
        self.session.drop()

    def interval(self) -> float:
        """Seconds from one poll's start to the next."""
        return self.poll_seconds

    def next_poll(self, started: float) -> float:
        """When the next poll is due (monotonic), the last one having started at
        ``started``."""
        return started + self.interval()

    def _sleep(self, seconds: float) -> None:
        """Until the next poll is due, :meth:`poll_now` is called, or the watch stops."""
        self._wake.wait(seconds)
        self._wake.clear()

    def poll_now(self) -> None:
        """Poll at once (a move wants its light checked, a takeover fresh readings)."""
        self._wake.set()

    @abstractmethod
    def poll(self, driver: D) -> bool | None:
        """One reading of the device (each kind of watch); ``False`` when it was put off
        and nothing was read."""

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()


class OcsWatch(_Watch[OcsDriver]):
    """Polls one OCS within its message budget: ``fast`` while it watches for this
    instance's links, else at the reconciliation rate."""

    def __init__(self, name: str, opener: OcsOpener, ports: Iterable[int], *,
                 budget: QueryBudget, poll_seconds: float, notify: Callable[[], None],
                 feeders: int = 0, related: Mapping[int, Iterable[int]] | None = None,
                 phase: float = 0.0, changing: Callable[[], bool] = lambda: False):
        """``feeders``: how many more ports a poll may read (the probes feeding the
        watched spans), for the poll's cost. ``related[port]``: the ports read with
        ``port`` when an alarm asks for it (those of the links through it: see
        :meth:`confirm`). ``phase``: where in each interval this watch's whole polls
        fall, a fraction (see :meth:`_next_slot`). ``changing()``: whether a change of
        the controller's is in flight on this OCS; a reconciliation falling due then
        waits for its end (see :meth:`poll`)."""
        self.phase = phase % 1.0
        self.changing = changing
        self.related = {port: frozenset(more) for port, more in (related or {}).items()}
        self.budget = budget
        # A read was asked for (a move's light check, an alarm) and has not begun; one so
        # asked is being read. Both take the budget's reserve; a request made while a read
        # is on the way is kept for the next one.
        self._asked = False
        self._answering = False
        super().__init__(name, budgeted_opener(opener, budget,
                                               urgent=lambda: self._asked or self._answering),
                         poll_seconds=poll_seconds, notify=notify)
        self.ports = sorted(set(ports))
        self._watched = frozenset(self.ports)
        self.sample: OcsSample | None = None
        self._map_digest: int | None = None
        """The CRC-32 of the sample's map (drivers.ocs.alarms.map_digest), as the unit
        announces its own on the alarm stream."""
        self._map_due = 0.0
        self.size: int | None = None
        self.fast = True
        self.alarms_live = False
        """The OCS's alarm stream is live: detection comes from it (alarms.py)."""
        self._fast_interval = poll_interval(budget.per_second,
                                            ports=len(self.ports) + feeders,
                                            map_every_seconds=MAP_EVERY_SECONDS,
                                            fastest_seconds=poll_seconds)
        self._samples = threading.Condition()
        self.polls = 0
        self._confirming: set[int] = set()  # ports an alarm asked to read (confirm())
        self._whole = True  # the next poll reads every port (poll_now())
        self._next_whole = 0.0  # when the next whole poll is due

    def interval(self) -> float:
        if self.fast and not self.alarms_live:
            return self._fast_interval
        return max(SLOW_POLL_SECONDS, self._fast_interval)

    def set_alarms_live(self, live: bool) -> None:
        """The alarm stream is live (poll slowly: a reconciliation) or lost (poll fast)."""
        was, self.alarms_live = self.alarms_live, live
        if was and not live:
            self.poll_now()

    def next_poll(self, started: float) -> float:
        return self._next_whole  # a confirming read does not put the next poll off

    def poll_now(self) -> None:
        """Poll every port at once, from the budget's reserve (a move's light check, a
        takeover, a reconnected alarm stream)."""
        with self._samples:
            self._whole = self._asked = True
        super().poll_now()

    def confirm(self, ports: Iterable[int]) -> None:
        """Read ``ports`` at once, from the budget's reserve, with every port of the
        links through them (:attr:`related`) and what feeds those: an alarm's port
        whose light is back, judged on the reading (and the light of those links' other
        span with it). One query for the ports of all the events that came meanwhile,
        not a sweep of every watched port per event. The next whole poll is not put
        off."""
        with self._samples:
            for port in ports:
                self._confirming.update(self.related.get(port, (port,)))
            self._asked = True
        super().poll_now()

    @property
    def poll_pending(self) -> bool:
        """A poll was asked for (an alarm, a change) and its reading has not come yet;
        never while the device is not answering (nothing will come)."""
        return (self._asked or self._answering) and self.down_since is None

    def set_fast(self, fast: bool) -> None:
        """Poll fast (this instance acts on what it sees) or slow (a reconciliation)."""
        if fast and not self.fast:
            self.fast = True
            self.poll_now()
        self.fast = fast

    def refresh_map(self) -> None:
        """Read the map at once (after a change): until it is read, the controller does
        not judge the links through this OCS, so the next poll must not wait for the
        reconciliation rate of a watch whose alarms are live."""
        self._map_due = 0.0
        self.poll_now()

    def poll(self, driver: OcsDriver) -> bool:
        """Read the ports an alarm asked for, or every port (asked for, or due). A
        reconciliation that falls due while a change is in flight on this OCS waits
        until it ends (checked every :data:`HELD_SECONDS`): the change reads what it
        needs and has the OCS read whole when it is done, and the reconciliation would
        only load the unit (256 readings) while its commands and light checks wait."""
        self.size = driver.size
        now = time.monotonic()
        with self._samples:
            if (self.alarms_live and not self._asked and not self._whole
                    and not self._confirming and now >= self._next_whole
                    and self.changing()):
                self._next_whole = now + HELD_SECONDS
                return False
            confirming, self._confirming = self._confirming, set()
            whole, self._whole = self._whole or now >= self._next_whole, False
            asked, self._asked = self._asked, False
            self._answering = asked
            current = self.sample
        try:
            if not whole and confirming and current is not None \
                    and current.port_map is not None:
                self._confirm(driver, sorted(confirming
                                             | _feeding(current.port_map, confirming)))
            else:
                self._next_whole = self._next_slot(now)
                self._read_whole(driver, current)
        except BaseException:
            with self._samples:
                self._whole = True  # after a failure every port is read again
                self._asked = self._asked or asked
            raise
        finally:
            self._answering = False
        return True

    def _next_slot(self, now: float) -> float:
        """When the whole poll after one at ``now`` is due. A reconciliation's: on this
        watch's own grid of intervals (offset by its phase), so that an instance's OCSes
        are not all read at the same moment, and at least half an interval away, so that
        the polls asked of every OCS of a change at once do not bring their watches back
        into step. A detecting poll's (no alarms): one interval on, never later."""
        interval = self.interval()
        if self.fast and not self.alarms_live:
            return now + interval
        offset = self.phase * interval
        return offset + math.ceil((now + interval / 2 - offset) / interval) * interval

    def _read_whole(self, driver: OcsDriver, current: OcsSample | None) -> None:
        now = time.monotonic()
        port_map, map_taken = ((None, None) if current is None
                               else (current.port_map, current.map_taken))
        digest = None
        if now >= self._map_due or port_map is None:
            port_map, map_taken = dict(driver.port_map()), time.monotonic()
            digest = map_digest(port_map)
            slow = not self.fast or self.alarms_live
            self._map_due = now + (SLOW_MAP_EVERY_SECONDS if slow else MAP_EVERY_SECONDS)
        # The ports that feed the watched ones (a probe parked by an earlier run) are
        # sources the controller judges spans by: read them too.
        powers = driver.power(sorted(self._watched | _feeding(port_map, self._watched)))
        # when the query left (it may have waited for the budget), not when it was asked
        transport = driver.session.transport
        asked = (transport.last_sent if isinstance(transport, BudgetedTransport)
                 else time.monotonic())
        with self._samples:
            current = self.sample
            if current is not None and current.map_taken is not None and (
                    map_taken is None or current.map_taken > map_taken):
                # a change of ours was adopted while this poll ran: its map is newer
                port_map, map_taken = current.port_map, current.map_taken
            elif digest is not None:
                self._map_digest = digest
            self.sample = OcsSample(time.monotonic(), powers, port_map, map_taken, asked)
            self.polls += 1
            self._samples.notify_all()

    def _confirm(self, driver: OcsDriver, ports: list[int]) -> None:
        """One reading of ``ports``, taken into the sample over its earlier readings."""
        powers = driver.power(ports)
        with self._samples:
            self._take_in(powers, time.monotonic())
            self.polls += 1
            self._samples.notify_all()

    def _take_in(self, readings: Mapping[int, float | None], taken: float) -> bool:
        """``readings`` over the sample's earlier ones, taken at ``taken`` (the caller
        holds the sample lock); False when there is no sample to take them into."""
        if self.sample is None:
            return False
        powers = dict(self.sample.powers)
        powers.update(readings)
        self.sample = replace(self.sample, taken=taken, powers=powers)
        return True

    def adopt_map(self, port_map: Mapping[int, int], taken: float) -> None:
        """The map a change of ours left (read back by the change at ``taken``): links
        through this OCS are judged on it at once, not after the next map read. No poll
        is asked for: one now would load the OCS while the change's light is checked
        (the change asks for one once it is). Its CRC is not worked out here, on the
        change's way: until that read, no change plans on the map the unit announces
        (:meth:`map_if`)."""
        with self._samples:
            if self.sample is not None:
                self.sample = replace(self.sample, port_map=dict(port_map), map_taken=taken)
                self._map_digest = None
                return
        self.refresh_map()  # nothing read yet: read it all

    def note_map(self, digest: int) -> None:
        """The unit announced its map (CRC-32 ``digest``, on its alarm stream): one that
        is not this watch's copy (changed elsewhere) is read at once, unless a change of
        ours is in flight on this OCS (it reads back the map it leaves, and adopts it).
        A watch kept for a standby (polling slowly) reads it with its next
        reconciliation instead: the owner's every change announces a map, and a read at
        once would load the unit just as the owner's change runs."""
        if self.changing():
            return
        with self._samples:
            if digest == self._map_digest:
                return
        if self.fast:
            self.refresh_map()
        else:
            self._map_due = 0.0

    def map_if(self, digest: int) -> tuple[dict[int, int], int] | None:
        """This watch's copy of the map and the unit's size, when the copy's CRC-32 is
        ``digest``; else ``None``."""
        with self._samples:
            sample = self.sample
            if (sample is None or sample.port_map is None or self.size is None
                    or self._map_digest != digest):
                return None
            return dict(sample.port_map), self.size

    def note_loss(self, readings: Mapping[int, float], received: float) -> None:
        """Loss of light the unit itself reported (an alarm event, with the reading that
        decided it): taken into the sample at once, so the decision does not wait for
        a poll's round trip. The other ports keep their last readings: while the alarms
        are live, a port whose light changed past its threshold would have raised its
        own event."""
        with self._samples:
            if not self._take_in(readings, received):
                return
        self.notify()

    def wait_sample(self, asked_after: float, deadline: float) -> OcsSample | None:
        """The first sample whose power query left after ``asked_after`` (monotonic), or
        ``None`` if none has come by ``deadline``."""
        with self._samples:
            while True:
                sample = self.sample
                if sample is not None and sample.asked > asked_after:
                    return sample
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    return None
                self._samples.wait(min(left, 0.05))


def _feeding(port_map: Mapping[int, int], egress: set[int] | frozenset[int]) -> set[int]:
    """The ingress ports that feed any of ``egress`` in ``port_map``."""
    return {i for i, e in port_map.items() if e in egress}


class AmpWatch(_Watch[AmpDriver]):
    def __init__(self, name: str, opener: AmpOpener, *, poll_seconds: float,
                 notify: Callable[[], None]):
        super().__init__(name, opener, poll_seconds=poll_seconds, notify=notify)
        self.sample: AmpReading | None = None
        self.previous: AmpReading | None = None  # the reading before ``sample``
        self._requests: queue.Queue[tuple[Callable[[AmpDriver], object], Future[object]]] = \
            queue.Queue()

    def submit(self, action: Callable[[AmpDriver], object]) -> Future[object]:
        """Run ``action`` on this amplifier's session, between two reads."""
        future: Future[object] = Future()
        self._requests.put((action, future))
        return future

    def poll(self, driver: AmpDriver) -> None:
        while True:
            try:
                action, future = self._requests.get_nowait()
            except queue.Empty:
                break
            try:
                future.set_result(action(driver))
            except BaseException as error:
                future.set_exception(error)
                if isinstance(error, DeviceError):
                    raise
        values = driver.module.read_fields(AMP_FIELDS)
        self.previous, self.sample = self.sample, reading(time.monotonic(), values)

    def run(self) -> None:
        try:
            super().run()
        finally:
            while not self._requests.empty():  # nobody waits for ever on a stopped watch
                _, future = self._requests.get_nowait()
                future.cancel()


def reading(taken: float, values: Mapping[str, object]) -> AmpReading:
    """An :class:`AmpReading` from the decoded :data:`AMP_FIELDS`."""

    def number(key: str) -> float | None:
        value = values.get(key)
        return float(value) if isinstance(value, int | float) else None

    state, status = values.get("module_state"), values.get("amp_status")
    als = values.get("als_state")
    return AmpReading(
        taken=taken,
        module_state=codes.name_of(codes.MODULE_STATES, state if isinstance(state, int)
                                   else None),
        input_dbm=number("input_power"), output_dbm=number("output_power"),
        gain_db=number("actual_gain"), target_gain_db=number("target_gain"),
        als_state=vp.ALS_STATES.get(als) if isinstance(als, int) else None,
        conditions=tuple(name for bit, name in vp.FLAG_BITS.items()
                         if isinstance(status, int) and status >> bit & 1),
    )
