"""``inventory check --deep``: everything about an inventory that can be known without
sending a byte to a device.

Loading an inventory checks its structure (fields, types, ranges, names, links).
The deep check also:

- resolves every secret reference (``env:NAME``, ``file:PATH``): each one that is
  missing, unreadable or empty is a problem; a secret is never printed;
- parses every address as its transport will: VISA resource strings (pyvisa's
  own parser, then the port of a ``::SOCKET`` resource), serial URLs
  (``socket://host:port``, ``rfc2217://host:port`` and pyserial's other
  handlers), local device paths and optoe files (they must exist), i2c-dev bus
  numbers or paths, ``host:port`` of NETCONF and SNMP;
- reads the files the inventory names: SSH key and known_hosts files, a laser's
  reference file (parsed as the acceptance test would).

Nothing is resolved through DNS and nothing is opened but local files.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from drivers.errors import ValidationError
from drivers.yamlfile import YamlFileError
from msoctl.inventory import Device, Endpoint, Inventory, SecretRef

_NET_URL = re.compile(r"(?P<scheme>socket|rfc2217)://(?P<host>[^:/?#\s]+):(?P<port>[0-9]{1,5})"
                      r"(?:[/?].*)?")
_OTHER_SERIAL_SCHEMES = ("loop", "spy", "alt", "hwgrep", "cp2110")
_I2C_BUS = re.compile(r"[0-9]{1,4}")
_PORT = re.compile(r"[0-9]{1,5}")


@dataclass
class DeepReport:
    """What the deep check found: ``problems`` (one line each), and what it checked."""

    problems: list[str] = field(default_factory=list)
    secrets: int = 0
    addresses: int = 0
    files: int = 0


def deep_check(inventory: Inventory) -> DeepReport:
    """Check every secret, address and file of ``inventory``; sends nothing."""
    report = DeepReport()
    for device in inventory.devices.values():
        _check_device(device, report)
    return report


def _check_device(device: Device, report: DeepReport) -> None:
    prefix = f"device {device.name!r}"
    endpoints = [("address", device.endpoint)]
    if device.console is not None:
        endpoints.append(("console address", device.console))
    for what, endpoint in endpoints:
        report.addresses += 1
        problem = address_problem(endpoint)
        if problem is not None:
            report.problems.append(f"{prefix}: {what} {endpoint.address!r}: {problem}")
    secrets: list[tuple[str, SecretRef]] = sorted(device.secrets.items())
    if device.snmp is not None:
        report.addresses += 1  # host:port, parsed when the inventory loaded
        for key in ("auth_key", "priv_key", "community"):
            reference = getattr(device.snmp, key)
            if reference is not None:
                secrets.append((f"snmp {key}", reference))
    if device.netconf is not None:
        report.addresses += 1
    for key, reference in secrets:
        report.secrets += 1
        problem = secret_problem(reference)
        if problem is not None:
            report.problems.append(f"{prefix}: {key} {reference.reference}: {problem}")
    files: list[tuple[str, Path]] = []
    if device.netconf is not None:
        if device.netconf.key_file is not None:
            files.append(("key_file", device.netconf.key_file))
        if device.netconf.known_hosts is not None:
            files.append(("known_hosts", device.netconf.known_hosts))
    for key, path in files:
        report.files += 1
        problem = _file_problem(path)
        if problem is not None:
            report.problems.append(f"{prefix}: {key} {path}: {problem}")
    if device.reference is not None:
        report.files += 1
        from msoctl.acceptance.characterize import load_test_set  # its parser, as the test reads it

        try:
            load_test_set(device.reference)
        except (ValidationError, YamlFileError) as error:
            report.problems.append(f"{prefix}: reference: {error}")


def secret_problem(reference: SecretRef) -> str | None:
    """Why ``reference`` does not resolve to a secret (None when it does); the secret
    itself is read and dropped, never returned."""
    scheme, _, target = reference.reference.partition(":")
    if scheme == "env":
        value = os.environ.get(target)
        if value is None:
            return "environment variable not set"
        return "environment variable is empty" if not value.strip() else None
    path = Path(target).expanduser()
    path = path if path.is_absolute() else reference.base / path
    problem = _file_problem(path)
    if problem is not None:
        return f"{problem} ({path})"
    try:
        empty = not path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        return f"cannot read {path}: {getattr(error, 'strerror', None) or error}"
    return f"{path} is empty" if empty else None


def _file_problem(path: Path) -> str | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return f"cannot read: {error.strerror or error}"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "cannot read: permission denied"
    return None


def address_problem(endpoint: Endpoint) -> str | None:
    """Why ``endpoint``'s address cannot be used by its transport (None when it can)."""
    transport, address = endpoint.transport, endpoint.address.strip()
    if transport == "visa":
        return _visa_problem(address)
    if transport in ("serial", "i2c-bridge"):
        return _serial_problem(address)
    if transport == "i2c-dev":
        path = f"/dev/i2c-{address}" if _I2C_BUS.fullmatch(address) else address
        return _device_file_problem(path, "I2C bus", character=True)
    if transport == "optoe":
        return _device_file_problem(address, "optoe file", character=False)
    return None  # netconf: host[:port], parsed when the inventory loaded


def _visa_problem(address: str) -> str | None:
    from pyvisa import rname

    try:
        parsed = rname.parse_resource_name(address)
    except rname.InvalidResourceName as error:
        return f"not a VISA resource string: {error}"
    port = getattr(parsed, "port", None)
    if port is not None and not (_PORT.fullmatch(str(port)) and 1 <= int(port) <= 65535):
        return f"port {port} is not 1..65535"
    host = getattr(parsed, "host_address", None)
    if host is not None and not str(host).strip():
        return "no host"
    if address.upper().startswith("ASRL"):
        device = getattr(parsed, "board", "")
        if str(device).startswith("/"):
            return _device_file_problem(str(device), "serial device", character=True)
    return None


def _serial_problem(address: str) -> str | None:
    if "://" not in address:
        return _device_file_problem(address, "serial device", character=True)
    match = _NET_URL.fullmatch(address)
    if match is not None:
        if not 1 <= int(match["port"]) <= 65535:
            return f"port {match['port']} is not 1..65535"
        return None
    scheme = address.split("://", 1)[0].lower()
    if scheme in ("socket", "rfc2217"):
        return f"write {scheme}://HOST:PORT"
    if scheme not in _OTHER_SERIAL_SCHEMES:
        return (f"unknown serial URL scheme {scheme!r} (socket, rfc2217, "
                f"{', '.join(_OTHER_SERIAL_SCHEMES)})")
    import serial

    try:
        serial.serial_for_url(address, do_not_open=True)
    except (ValueError, serial.SerialException) as error:
        return str(error)
    return None


def _device_file_problem(path: str, what: str, *, character: bool) -> str | None:
    if not path.startswith("/"):
        return f"a {what} is an absolute path"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"no such {what}"
    except OSError as error:
        return f"cannot use: {error.strerror or error}"
    if character and not stat.S_ISCHR(info.st_mode):
        return f"not a {what} (not a character device)"
    if not character and not stat.S_ISREG(info.st_mode):
        return f"not an {what}" if what[0] in "aeiou" else f"not a {what}"
    return None
