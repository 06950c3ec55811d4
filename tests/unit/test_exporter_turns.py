"""The exporter's turns for device readings (msoctl/exporter/turns.py) and its pool of
held OCS sessions (msoctl/exporter/sessions.py): who gets a free turn, who gives up,
and when a held session is closed. A stepped clock decides the deadlines and the idle
times; no test waits for real time to pass (a waiter released is woken at once)."""

from __future__ import annotations

import threading

import pytest

from drivers.scpi.session import ScpiSession
from drivers.transports.visa import VisaTransport
from msoctl.exporter.sessions import SessionPool
from msoctl.exporter.turns import Turns


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _waiting(turns: Turns, deadline: float, results: dict[float, bool]) -> threading.Thread:
    count = turns.waiting
    thread = threading.Thread(target=lambda: results.__setitem__(deadline,
                                                                 turns.acquire(deadline)))
    thread.start()
    while turns.waiting == count:  # it has queued
        thread.join(0.001)
    return thread


def test_a_free_turn_goes_to_the_waiter_with_the_most_budget_left() -> None:
    clock = Clock()
    turns = Turns(1, min_seconds=1.0, clock=clock)
    assert turns.acquire(clock.now + 10)
    results: dict[float, bool] = {}
    threads = [_waiting(turns, clock.now + seconds, results) for seconds in (5, 9, 7)]
    turns.release()  # to the deadline 9 s out, though it came second
    threads[1].join(5)
    assert results == {clock.now + 9: True}
    turns.release()
    threads[2].join(5)
    assert results[clock.now + 7] is True
    clock.now += 4.5  # the last waiter has 0.5 s left, less than min_seconds
    turns.release()
    threads[0].join(5)
    assert results[clock.now - 4.5 + 5] is False
    assert turns.waiting == 0
    assert turns.acquire(clock.now + 10)  # the turn went back to the pool
    assert not turns.acquire(clock.now)  # and there is one only: nothing left to wait


def test_turns_refuse_what_they_cannot_be() -> None:
    with pytest.raises(ValueError):
        Turns(0)
    with pytest.raises(ValueError):
        Turns(1, min_seconds=-1)
    turns = Turns(1)
    with pytest.raises(ValueError):
        turns.release()  # never acquired


def _session(name: str) -> ScpiSession:
    return ScpiSession(VisaTransport("TCPIP::127.0.0.1::1::SOCKET"), device=name)


def test_a_held_session_is_one_probes_at_a_time_and_closed_when_idle() -> None:
    clock = Clock()
    pool = SessionPool(idle_seconds=90, max_sessions=2, clock=clock)
    assert pool.take("a") is None  # nothing held: the caller opens one
    first = _session("a")
    pool.give_back("a", first)
    assert pool.take("a") is first
    assert pool.take("a") is None  # taken: a second probe does not share it
    pool.give_back("a", first)
    clock.now += 89
    assert pool.take("a") is first
    pool.give_back("a", first)
    clock.now += 91
    assert pool.take("a") is None  # idle for longer than idle_seconds: closed
    assert (pool.opened, pool.reused) == (3, 2)


def test_the_pool_holds_at_most_max_sessions_the_longest_idle_closed_first() -> None:
    clock = Clock()
    pool = SessionPool(idle_seconds=90, max_sessions=2, clock=clock)
    for name in "abc":
        pool.give_back(name, _session(name))
        clock.now += 1
    assert len(pool) == 2
    assert pool.take("a") is None
    assert pool.take("b") is not None and pool.take("c") is not None
    none_kept = SessionPool(max_sessions=0)
    none_kept.give_back("a", _session("a"))
    assert len(none_kept) == 0
    with pytest.raises(ValueError):
        SessionPool(idle_seconds=0)
    with pytest.raises(ValueError):
        SessionPool(max_sessions=-1)
