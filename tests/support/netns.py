"""A job's fabric built of Linux network namespaces, laid out as msoctl sees it and slowed
down by one factor, for collectives that run over it for real.

**Layout** (:func:`layout_of`, from msoctl's own :class:`~msoctl.jobs.fabric.JobFabric`):
a namespace per host with one interface, ``nic0``, its NIC; a namespace per switch
holding a Linux bridge, one port per host NIC cabled to it; a namespace per pair of
switches that fabric links join (a *trunk*: the links between two campuses, over their
span), with a veth end toward each switch. Every host is on one L2 segment (the
switches bridge, so the switches and trunks must form a tree: a loop would flood).

**Shaping**, in the kernel: tbf at every egress, at the rate of what it stands for:
both ends of a host's cable at its NIC's speed; each switch's port toward a trunk at the
trunk's links together (``up_links`` times the port speed, as the job fabric counts
them: with four NICs behind one 400G link, the span is oversubscribed four to one).
Queues are deep (a lossless fabric, as RoCE's lossless priority is: nothing dropped, so
no TCP loss recovery in the figures). **Delay**: a trunk's namespace runs
tests/support/delayline.py, which holds each frame for the span's propagation time
(5 µs/km of its length), because this kernel has no sch_netem.

**Time scale**: every rate divided by ``scale`` and every delay multiplied by it, so that
a collective of ``S`` bytes takes ``scale`` times as long as on the real fabric, with
latency and transfer time in the real proportion. The machine's own latencies (a few
tens of µs a step) then weigh ``scale`` times less than they would unscaled.

TCP is set up as an RDMA fabric behaves: no slow start after idle, a large initial
window, buffers for the scaled bandwidth-delay product.

:class:`NamespaceFabric` builds it and always takes it down (namespaces, the delay
lines); the namespace names carry the builder's pid and a random tag, so that parallel
workers never collide, and namespaces left by a builder that was killed are removed by
the next one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from msoctl.hosts import HostNic
from msoctl.jobs.fabric import JobFabric
from msoctl.jobs.ringcost import FIBRE_SECONDS_PER_KM
from msoctl.journal.model import pid_alive

PREFIX = "msoring"
NETNS_DIR = Path("/run/netns")
SUBNET = "10.77.0.0/16"
MTU = 65000  # fewer, larger frames for the machine to move; the model never sees it
TCP_BUFFER_BYTES = 64 * 1024 * 1024
INITIAL_WINDOW_SEGMENTS = 1000
QUEUE_BYTES = 64 * 1024 * 1024
MIN_BURST_BYTES = 128 * 1024  # a whole 64 KB GSO frame passes tbf unsegmented
COMMAND_SECONDS = 30.0
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class HostPort:
    host: str
    nic: str
    switch: str
    rate_bps: float  # scaled
    address: str


@dataclass(frozen=True)
class Trunk:
    a: str  # switch
    b: str
    links: tuple[str, ...]
    rate_bps: float  # scaled, each way
    delay_seconds: float  # scaled, one way
    span_km: float


@dataclass(frozen=True)
class Layout:
    scale: float
    hosts: tuple[HostPort, ...]
    switches: tuple[str, ...]
    trunks: tuple[Trunk, ...]

    def host(self, name: str) -> HostPort:
        return next(port for port in self.hosts if port.host == name)


def layout_of(fabric: JobFabric, nics: Mapping[str, HostNic], span_km: Mapping[str, float],
              *, scale: float) -> Layout:
    """The namespace fabric for ``nics`` (host -> the NIC its rank uses) over ``fabric``:
    each switch those NICs are on, the switches between them, and the trunks that join
    them, rates divided and delays multiplied by ``scale``."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    hosts = []
    for index, (host, nic) in enumerate(sorted(nics.items())):
        hosts.append(HostPort(host, nic.name, nic.switch, nic.speed_bps / scale,
                              f"10.77.{index // 250}.{index % 250 + 1}"))
    switches: set[str] = {port.switch for port in hosts}
    pairs: set[tuple[str, str]] = set()
    ends = sorted(switches)
    for a, b in ((a, b) for a in ends for b in ends if a < b):
        path = fabric.switch_path(a, b)
        if path is None:
            raise ValueError(f"the fabric does not join {a} and {b}")
        switches.update(path)
        pairs.update((min(x, y), max(x, y)) for x, y in itertools.pairwise(path))
    trunks = []
    for a, b in sorted(pairs):
        links = tuple(fabric.links[(a, b)])
        km = max(span_km[name] for name in links)
        rate = len(links) * (fabric.speed_bps(a) or fabric.speed_bps(b))
        trunks.append(Trunk(a, b, links, rate / scale, km * FIBRE_SECONDS_PER_KM * scale, km))
    if len(trunks) != len(switches) - 1:
        raise ValueError("the switches and their trunks must form a tree (bridged: a loop "
                         "would flood)")
    return Layout(scale, tuple(hosts), tuple(sorted(switches)), tuple(trunks))


@dataclass
class NamespaceFabric:
    """The layout built (``with NamespaceFabric(layout) as fabric:``) and taken down."""

    layout: Layout
    tag: str = field(default_factory=lambda: f"{os.getpid()}-{secrets.token_hex(3)}")
    namespaces: list[str] = field(default_factory=list)
    delay_lines: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def namespace(self, host: str) -> str:
        index = [port.host for port in self.layout.hosts].index(host)
        return f"{PREFIX}-{self.tag}-h{index}"

    def address(self, host: str) -> str:
        return self.layout.host(host).address

    def __enter__(self) -> NamespaceFabric:
        remove_abandoned()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _build(self) -> None:
        layout = self.layout
        switch_ns = {name: f"{PREFIX}-{self.tag}-s{i}" for i, name in enumerate(layout.switches)}
        trunk_ns = [f"{PREFIX}-{self.tag}-t{i}" for i in range(len(layout.trunks))]
        host_ns = [self.namespace(port.host) for port in layout.hosts]
        for name in [*switch_ns.values(), *trunk_ns, *host_ns]:
            _ip("netns", "add", name)
            self.namespaces.append(name)
        # ip and tc take a batch per namespace; the veths are made from the hosts' and
        # trunks' side (their peers sent to the switch), so those batches go first
        batches: dict[str, list[str]] = {ns: ["link set dev lo up"] for ns in self.namespaces}
        shaping: dict[str, list[str]] = {ns: [] for ns in self.namespaces}
        for ns in switch_ns.values():
            batches[ns] += [f"link add br0 mtu {MTU} type bridge stp_state 0 forward_delay 0 "
                            "mcast_snooping 0", "link set dev br0 up"]
        for index, (port, ns) in enumerate(zip(layout.hosts, host_ns, strict=True)):
            sw = switch_ns[port.switch]
            batches[ns] += [f"link add nic0 mtu {MTU} type veth peer name p{index} netns {sw} "
                            f"mtu {MTU}",
                            f"addr add {port.address}/16 dev nic0", "link set dev nic0 up",
                            f"route replace {SUBNET} dev nic0 src {port.address} initcwnd "
                            f"{INITIAL_WINDOW_SEGMENTS} initrwnd {INITIAL_WINDOW_SEGMENTS}"]
            batches[sw] += [f"link set dev p{index} master br0", f"link set dev p{index} up"]
            shaping[ns].append(_tbf("nic0", port.rate_bps))
            shaping[sw].append(_tbf(f"p{index}", port.rate_bps))
        for index, (trunk, ns) in enumerate(zip(layout.trunks, trunk_ns, strict=True)):
            for end, switch in (("ta", trunk.a), ("tb", trunk.b)):
                sw = switch_ns[switch]
                batches[ns] += [f"link add {end} mtu {MTU} type veth peer name t{index} "
                                f"netns {sw} mtu {MTU}", f"link set dev {end} up"]
                batches[sw] += [f"link set dev t{index} master br0", f"link set dev t{index} up"]
                shaping[sw].append(_tbf(f"t{index}", trunk.rate_bps))
        for ns in [*host_ns, *trunk_ns, *switch_ns.values()]:
            _run(["ip", "-n", ns, "-batch", "-"], stdin="\n".join(batches[ns]) + "\n")
        for ns, commands in shaping.items():
            if commands:
                _run(["tc", "-n", ns, "-batch", "-"], stdin="\n".join(commands) + "\n")
        for ns in host_ns:
            _run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                  f"net.ipv4.tcp_rmem=4096 1048576 {TCP_BUFFER_BYTES}",
                  f"net.ipv4.tcp_wmem=4096 1048576 {TCP_BUFFER_BYTES}",
                  "net.ipv4.tcp_slow_start_after_idle=0",
                  "net.ipv4.tcp_no_metrics_save=1"])
        for trunk, ns in zip(layout.trunks, trunk_ns, strict=True):
            line = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-m", "tests.support.delayline",
                 "--a", "ta", "--b", "tb", "--delay-seconds", f"{trunk.delay_seconds:.9f}"],
                stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
            self.delay_lines.append(line)
            assert line.stdout is not None
            if line.stdout.readline().strip() != b"ready":
                raise RuntimeError(f"the delay line of {trunk.a}-{trunk.b} did not start "
                                   f"(exit {line.wait(timeout=COMMAND_SECONDS)})")

    def close(self) -> None:
        """Stop the delay lines and remove every namespace made, whatever failed."""
        for line in self.delay_lines:
            _stop(line)
        self.delay_lines.clear()
        for name in reversed(self.namespaces):
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                _ip("netns", "del", name)
        self.namespaces.clear()


def _tbf(device: str, rate_bps: float) -> str:
    """tbf at ``rate_bps``, a burst of a millisecond's worth (at least a GSO frame) and a
    deep queue."""
    burst = max(MIN_BURST_BYTES, int(rate_bps / 8 / 1000))
    return (f"qdisc add dev {device} root tbf rate {int(rate_bps)}bit burst {burst} "
            f"limit {QUEUE_BYTES}")


def unavailable() -> str | None:
    """Why this machine cannot build a namespace fabric (no root, no namespaces, no tbf),
    or None: a namespace is made, shaped and removed."""
    if os.geteuid() != 0:
        return "network namespaces and qdiscs need root"
    name = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(3)}-probe"
    try:
        _ip("netns", "add", name)
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        return f"cannot make a network namespace ({error})"
    try:
        _run(["ip", "-n", name, "link", "add", "probe0", "type", "veth", "peer", "name",
              "probe1"])
        _run(["tc", "-n", name, *_tbf("probe0", 1e9).split()])
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        return f"cannot make a shaped veth pair ({error})"
    finally:
        with contextlib.suppress(RuntimeError, OSError, subprocess.SubprocessError):
            _ip("netns", "del", name)
    return None


def remove_abandoned() -> None:
    """Remove the namespaces of builders that no longer run (killed before their clean-up:
    their pid is in the name)."""
    if not NETNS_DIR.is_dir():
        return
    for path in NETNS_DIR.iterdir():
        parts = path.name.split("-")
        if len(parts) != 4 or parts[0] != PREFIX or not parts[1].isdigit():
            continue
        if pid_alive(int(parts[1])):
            continue
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            _ip("netns", "del", path.name)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if process.stdout is not None:
        process.stdout.close()


def _ip(*arguments: str, stdin: str | None = None) -> None:
    _run(["ip", *arguments], stdin=stdin)


def _run(command: Sequence[str], *, stdin: str | None = None) -> None:
    done = subprocess.run(list(command), input=stdin, capture_output=True, text=True,
                          timeout=COMMAND_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])}: {done.stderr.strip() or done.stdout}")


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """Have the kernel send ``signum`` to this process when its parent ends
    (``PR_SET_PDEATHSIG``), so that a test runner killed outright leaves no delay line or
    rank running in a namespace of its own."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() == 1:  # the parent had already gone
        os.kill(os.getpid(), signum)


def enter(namespace: str) -> None:
    """Move the calling thread into ``namespace`` for good (``setns``): the sockets it
    opens from then on, and the threads it starts, are the namespace's."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    with open(NETNS_DIR / namespace, "rb") as there:
        if libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {namespace} failed")
