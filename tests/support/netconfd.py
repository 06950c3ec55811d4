"""A real NETCONF server for the interop tests: Debian's netconfd (yuma123) loaded with
yang/msoctl-congestion.yang, behind a private sshd on a loopback ephemeral port.

``running_netconfd(directory)`` starts both and yields a :class:`NetconfdPeer` (host,
port, user, private key, known_hosts); it stops both when the block ends, however it
ends. Everything either daemon writes stays in ``directory``:

- netconfd: ``--target=candidate --with-startup=true`` with its startup file, its
  ncxserver socket, its log and its transaction-id file there (its working directory
  and HOME); ``--access-control=off`` and ``--superuser=<user>``, so no NACM rule
  stands in the way; ``--port=<sshd port>``, because netconfd accepts a session only
  when the SSH port the subsystem reports is one of its ports.
- sshd: its own ``sshd_config`` (ListenAddress 127.0.0.1, the port, PidFile, a host
  key and the user's authorized key generated here, public-key login only, UsePAM no,
  StrictModes no, PermitRootLogin prohibit-password, HOME set to ``directory`` so that
  the login shell reads no ~/.bashrc) whose only subsystem is
  ``netconf "/usr/sbin/netconf-subsystem --ncxserver-sockname=<port>@<socket>"``:
  yuma123's subsystem takes the socket path only for the SSH port named before the
  ``@``, and otherwise falls back to /tmp/ncxserver.sock.

One thing lies outside ``directory``: yuma123 creates ``~/.yuma`` (the home directory
of /etc/passwd, not $HOME) when it starts. It writes nothing in it here (its
transaction-id file is found in the working directory first), and the directory is
removed again when this module created it and it is still empty.

No system sshd is involved: installing openssh-server may start one (on port 22),
which these tests never use.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import asyncssh

from drivers.switch.netconf import BaseHelloHandler
from tests.support.paths import YANG
from tests.support.peers import require_executable
from tests.support.ports import free_port

MODULE = YANG / "msoctl-congestion.yang"
START_SECONDS = 5.0  # each daemon; both need well under a second (netconfd about 0.1 s)
STOP_SECONDS = 5.0
ATTEMPTS = 3  # the ephemeral port is picked before sshd binds it: another may take it
LOG_LINES = 60  # of each daemon's log in a failure message
# The longest path an AF_UNIX socket address holds (sun_path is 108 bytes on Linux).
_SOCKET_PATH_BYTES = 107
EMPTY_CONFIG = '<config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"/>\n'


class PeerStartError(RuntimeError):
    """netconfd or sshd did not come up; the message carries both daemons' logs."""


@dataclass(frozen=True)
class NetconfdPeer:
    """Where the private netconfd answers, and the credentials it accepts.

    ``known_hosts`` holds the private sshd's host key as ``[127.0.0.1]:port``;
    ``ssh_config`` points ncclient at it (ncclient reads known_hosts only through
    ``UserKnownHostsFile`` of an ssh_config file, or from ~/.ssh/known_hosts).
    """

    host: str
    port: int
    username: str
    key_path: Path
    known_hosts: Path
    ssh_config: Path
    directory: Path

    def ncclient_options(self) -> dict[str, Any]:
        """Keyword arguments for ``ncclient.manager.connect``: key login, host key checked,
        and the driver's short hello (``BaseHelloHandler``: with ncclient's own, netconfd
        2.13 can leave a session's first RPC unanswered; docs/dialects/netconf.md)."""
        return {
            "host": self.host, "port": self.port, "username": self.username,
            "key_filename": str(self.key_path), "ssh_config": str(self.ssh_config),
            "hostkey_verify": True, "allow_agent": False, "look_for_keys": False,
            "device_params": {"handler": BaseHelloHandler},
        }

    def logs(self) -> str:
        """The tail of both daemons' logs, for a failure message."""
        return _logs(self.directory)


def require_netconfd_peer() -> tuple[Path, Path, Path]:
    """netconfd, netconf-subsystem and sshd; a missing one skips (or fails in CI)."""
    return (
        require_executable("netconfd", debian_package="netconfd"),
        require_executable("netconf-subsystem", debian_package="netconfd"),
        require_executable("sshd", debian_package="openssh-server"),
    )


@contextlib.contextmanager
def running_netconfd(directory: Path, *, module: Path = MODULE) -> Iterator[NetconfdPeer]:
    """netconfd with ``module`` behind a private sshd, files in ``directory``; both
    daemons are stopped when the block ends. Raises :class:`PeerStartError` (with the
    daemons' logs) when either is not up within :data:`START_SECONDS`."""
    programs = require_netconfd_peer()
    directory.mkdir(parents=True, exist_ok=True)
    username = pwd.getpwuid(os.geteuid()).pw_name
    keys = _Keys(directory)
    with _socket_directory(directory) as socket_dir, yuma_kept_out_of_home(directory):
        daemons, port = _start(programs, module, directory, socket_dir, username, keys)
        try:
            known_hosts = directory / "known_hosts"
            known_hosts.write_text(f"[127.0.0.1]:{port} {keys.host_public}\n",
                                   encoding="ascii")
            ssh_config = directory / "ssh_config"
            ssh_config.write_text(f"Host *\n  UserKnownHostsFile {known_hosts}\n",
                                  encoding="ascii")
            yield NetconfdPeer(host="127.0.0.1", port=port, username=username,
                               key_path=keys.client_private, known_hosts=known_hosts,
                               ssh_config=ssh_config, directory=directory)
        finally:
            daemons.stop()


def _start(programs: tuple[Path, Path, Path], module: Path, directory: Path,
           socket_dir: Path, username: str, keys: _Keys) -> tuple[_Daemons, int]:
    """Both daemons up on a port picked for sshd (and given to netconfd as its port)."""
    netconfd, subsystem, sshd = programs
    for _ in range(ATTEMPTS):
        port = free_port()
        daemons = _Daemons()
        try:
            daemons.start_netconfd(netconfd, module, directory, socket_dir, port, username)
            daemons.start_sshd(sshd, subsystem, directory, socket_dir, port, username, keys)
        except _PortTaken:
            daemons.stop()
            continue
        except BaseException:
            daemons.stop()
            raise
        return daemons, port
    raise PeerStartError(f"sshd found its port taken {ATTEMPTS} times\n{_logs(directory)}")


@contextlib.contextmanager
def yuma_kept_out_of_home(working_directory: Path) -> Iterator[None]:
    """Run netconfd in ``working_directory`` without leaving files in ``~/.yuma``.

    yuma123 looks for its transaction-id file in its working directory first and
    otherwise writes one in ``~/.yuma`` (the home of /etc/passwd, whatever $HOME
    says), which it creates at start in any case: the file is put in
    ``working_directory``, and ``~/.yuma`` is removed again if it was not there before
    and is still empty.
    """
    yuma_dir = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".yuma"
    existed = yuma_dir.exists()
    txid = working_directory / "startup-cfg-txid.txt"
    if not txid.exists():
        txid.write_text("0\n", encoding="ascii")
    try:
        yield
    finally:
        if not existed:
            with contextlib.suppress(OSError):  # not empty, or not there: leave it
                yuma_dir.rmdir()


# ---- the pieces ---------------------------------------------------------------------


class _PortTaken(Exception):
    """sshd could not bind the port picked for it."""


class _Keys:
    """The sshd host key and the client's key pair, generated in ``directory``."""

    def __init__(self, directory: Path):
        host = asyncssh.generate_private_key("ssh-ed25519", comment="msoctl-test-host")
        client = asyncssh.generate_private_key("ssh-ed25519", comment="msoctl-test-client")
        self.host_private = directory / "ssh_host_ed25519_key"
        self.client_private = directory / "client_ed25519_key"
        self.authorized_keys = directory / "authorized_keys"
        for path, key in ((self.host_private, host), (self.client_private, client)):
            path.write_bytes(key.export_private_key("openssh"))
            path.chmod(0o600)
        self.host_public = _public_text(host)
        self.authorized_keys.write_text(_public_text(client) + "\n", encoding="ascii")


def _public_text(key: asyncssh.SSHKey) -> str:
    return bytes(key.export_public_key("openssh")).decode("ascii").strip()


class _Daemons:
    """The two processes, started in order and always stopped (sshd first)."""

    def __init__(self) -> None:
        self.netconfd: subprocess.Popen[bytes] | None = None
        self.sshd: subprocess.Popen[bytes] | None = None
        self._outputs: list[IO[bytes]] = []

    def start_netconfd(self, program: Path, module: Path, directory: Path,
                       socket_dir: Path, port: int, username: str) -> None:
        startup = directory / "startup-cfg.xml"
        if not startup.exists():
            startup.write_text(EMPTY_CONFIG, encoding="ascii")
        ncx_socket = socket_dir / "ncxserver.sock"
        with contextlib.suppress(FileNotFoundError):
            ncx_socket.unlink()
        command = [
            str(program), f"--module={module}", "--target=candidate",
            "--with-startup=true", f"--startup={startup}",
            f"--port={port}", f"--ncxserver-sockname={ncx_socket}",
            "--access-control=off", f"--superuser={username}",
            # debug2: every buffer read from a session and every reply sent is logged,
            # so a failure's log tail shows whether a reply left netconfd
            f"--log={directory / 'netconfd.log'}", "--log-level=debug2",
        ]
        (directory / "netconfd.command").write_text(" ".join(command) + "\n")
        self.netconfd = self._spawn(command, directory / "netconfd.out", cwd=directory,
                                    env={"HOME": str(directory),
                                         "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        self._wait("netconfd", self.netconfd, directory,
                   lambda: ncx_socket.exists() and _unix_connects(ncx_socket))

    def start_sshd(self, program: Path, subsystem: Path, directory: Path,
                   socket_dir: Path, port: int, username: str, keys: _Keys) -> None:
        _privilege_separation_directory()
        config = directory / "sshd_config"
        ncx_socket = socket_dir / "ncxserver.sock"
        config.write_text("\n".join([
            "# A private sshd for the msoctl interop tests: loopback only, key login only.",
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {keys.host_private}",
            f"PidFile {directory / 'sshd.pid'}",
            f"AuthorizedKeysFile {keys.authorized_keys}",
            f"AllowUsers {username}",
            "AuthenticationMethods publickey",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",  # the keys live under /tmp, which is world-writable
            "PermitTTY no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "AllowAgentForwarding no",
            "PrintMotd no",
            # sshd runs the subsystem through the user's login shell, and bash started by
            # sshd reads ~/.bashrc even when not interactive: a .bashrc that sets up
            # pyenv (as this machine's does) cost 0.2 s of CPU per session. HOME here has
            # none.
            f"SetEnv HOME={directory}",
            "LogLevel VERBOSE",
            f'Subsystem netconf "{subsystem} --ncxserver-sockname={port}@{ncx_socket}"',
            "",
        ]), encoding="ascii")
        # sshd re-executes itself, so it must be started by its absolute path.
        self.sshd = self._spawn([str(program), "-D", "-e", "-f", str(config)],
                                directory / "sshd.log", cwd=directory, env=None)
        self._wait("sshd", self.sshd, directory, lambda: _tcp_connects(port),
                   port_taken=True)

    def stop(self) -> None:
        for process in (self.sshd, self.netconfd):
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_SECONDS)
        for output in self._outputs:
            output.close()
        self._outputs.clear()

    def _spawn(self, command: list[str], output_path: Path, *, cwd: Path,
               env: dict[str, str] | None) -> subprocess.Popen[bytes]:
        output = output_path.open("ab")
        self._outputs.append(output)
        return subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=output, stderr=subprocess.STDOUT)

    def _wait(self, name: str, process: subprocess.Popen[bytes], directory: Path,
              ready: Any, *, port_taken: bool = False) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not ready():
            code = process.poll()
            if code is not None:
                if port_taken and "Address already in use" in _read(directory / "sshd.log"):
                    raise _PortTaken
                raise PeerStartError(f"{name} exited with status {code} before it was "
                                     f"ready\n{_logs(directory)}")
            if time.monotonic() > deadline:
                raise PeerStartError(f"{name} was not ready within {START_SECONDS:.0f} s\n"
                                     f"{_logs(directory)}")
            time.sleep(0.02)


@contextlib.contextmanager
def _socket_directory(directory: Path) -> Iterator[Path]:
    """``directory``, unless the socket path would be too long for AF_UNIX there: then
    a short temporary directory, removed afterwards."""
    if len(os.fsencode(directory / "ncxserver.sock")) <= _SOCKET_PATH_BYTES:
        yield directory
        return
    with tempfile.TemporaryDirectory(prefix="ncx-") as short:
        yield Path(short)


def _privilege_separation_directory() -> None:
    """sshd started as root refuses to run without /run/sshd (its privsep chroot)."""
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)


def _tcp_connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _unix_connects(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _logs(directory: Path) -> str:
    parts = []
    for name in ("netconfd.command", "netconfd.out", "netconfd.log", "sshd.log"):
        lines = _read(directory / name).splitlines()[-LOG_LINES:]
        parts.append(f"--- {directory / name} ---\n" + ("\n".join(lines) or "(empty)"))
    return "\n".join(parts)
