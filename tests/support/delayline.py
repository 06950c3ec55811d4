"""A span's propagation delay in user space: ``python -m tests.support.delayline --a IF
--b IF --delay-seconds D``, run in a network namespace of its own between two veth ends.

Every Ethernet frame that arrives on one end leaves by the other ``D`` seconds later, in
order, unchanged. This stands in for ``tc netem delay``, which kernels built without
``sch_netem`` (and without fq, etf or taprio, the other qdiscs that can hold a packet
until a time) cannot do. Rate is not this program's business: the kernel's tbf shapes
the span before the frames reach it, and the line never drops a frame (a lossless
span, as RoCE's lossless priority is).

Frames are read and written through ``AF_PACKET`` sockets with ``PACKET_VNET_HDR``: each
carries the kernel's virtio-net header (whether its TCP checksum is still to be filled
in, and how a 64 KB GSO frame is to be cut), which is handed back unchanged when the
frame is sent on, so that neither checksums nor segmentation are lost on the way (a
plain packet socket would pass on a frame whose checksum the sender's veth never
computed, and the receiver would drop it).

It runs at a low real-time priority (``SCHED_FIFO``) where it may: a span's delay is the
glass's, and should not grow while the ranks keep the CPUs busy (it blocks in
``select`` between frames). Stops on SIGTERM or SIGINT, and when the process that
started it ends; prints ``ready`` on stdout once both ends are open.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import select
import signal
import socket
import sys
import threading
import time
from types import FrameType

from tests.support.netns import die_with_parent

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
SOCKET_BUFFER_BYTES = 64 * 1024 * 1024
"""Room for a whole scaled span's worth of frames in flight, so the socket never drops."""
REALTIME_PRIORITY = 10
"""SCHED_FIFO, low among real-time tasks: the line blocks in select between frames."""
MAX_FRAME_BYTES = 10 + 65536 + 14  # the virtio-net header, a GSO frame and its Ethernet header


def open_end(interface: str) -> socket.socket:
    end = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    end.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    end.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)  # not our own sends back
    end.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, SOCKET_BUFFER_BYTES)
    end.bind((interface, ETH_P_ALL))
    end.setblocking(False)
    return end


def carry(source: socket.socket, sink: socket.socket, delay_seconds: float,
          stopping: threading.Event) -> None:
    """Frames from ``source`` to ``sink``, each held until ``delay_seconds`` after it
    arrived."""
    held: collections.deque[tuple[float, bytes]] = collections.deque()
    while not stopping.is_set():
        wait = 0.2 if not held else max(0.0, held[0][0] - time.monotonic())
        readable, _, _ = select.select([source], [], [], wait)
        if readable:
            now = time.monotonic()
            while True:
                try:
                    frame = source.recv(MAX_FRAME_BYTES)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:  # the end is down for a moment (ENETDOWN): try again
                    time.sleep(0.01)
                    break
                held.append((now + delay_seconds, frame))
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, frame = held.popleft()
            _send(sink, frame)


def _send(sink: socket.socket, frame: bytes) -> None:
    while True:
        try:
            sink.send(frame)
            return
        except BlockingIOError:  # the far veth's queue is full for a moment
            select.select([], [sink], [], 0.01)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="one veth end")
    parser.add_argument("--b", required=True, help="the other veth end")
    parser.add_argument("--delay-seconds", type=float, required=True)
    options = parser.parse_args(argv)
    if not 0 <= options.delay_seconds <= 10:
        parser.error("--delay-seconds: must be 0..10")
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    die_with_parent(signal.SIGTERM)
    with contextlib.suppress(OSError):  # a span's delay is hardware's: not to wait for the CPU
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))
    a, b = open_end(options.a), open_end(options.b)
    lines = [threading.Thread(target=carry, args=(a, b, options.delay_seconds, stopping),
                              daemon=True),
             threading.Thread(target=carry, args=(b, a, options.delay_seconds, stopping),
                              daemon=True)]
    for line in lines:
        line.start()
    print("ready", flush=True)
    while not stopping.is_set():
        stopping.wait(0.5)
    for line in lines:
        line.join(timeout=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
