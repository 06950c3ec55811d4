"""The inventory: one YAML file of devices.

Secrets are never written in it, only referred to: ``env:NAME`` or
``file:PATH`` (relative paths are relative to the inventory file). Every
error names the file, the line, the device and the field.

Example::

    journal: journal.sqlite         # optional: an SQLite file, relative to this file,
                                    # or postgresql://msoctl@db.example/msoctl?sslmode=verify-full
    journal_password: env:MSOCTL_DB_PASSWORD   # PostgreSQL only; or file:PATH, or ~/.pgpass
    devices:
      - name: ocs-a
        kind: ocs
        transport: visa             # visa | serial
        address: TCPIP::10.0.0.5::5025::SOCKET
        timeout_seconds: 5
        labels: {campus: a}
        max_switch_power_dbm: 20    # safety limit for switching a lit port
        shared_error_queue: false   # true: the unit keeps one SCPI error queue for every client
        alarm_port: 5026            # optional: its loss-of-light alarm connection (TCP); else
                                    # asked of the unit (:SYST:COMM:ALAR:PORT?) when needed
        console:                    # optional second way in
          transport: serial
          address: /dev/ttyUSB0
      - name: sw-a
        kind: switch
        transport: netconf          # NETCONF over SSH
        address: 10.0.1.2           # host, host:port or [v6]:port; port 830 by default
        username: msoctl
        password: file:secrets/sw-a.password   # and/or key_file: PATH
        known_hosts: known_hosts    # default ~/.ssh/known_hosts; host keys are verified
        accept_unknown_host_keys: false        # true only in labs
                                    # transport: none (no address): an unmanaged switch, whose
                                    # optics are in the fabric and nothing else is reached
        model: auto                 # openconfig | sonic | msoctl | auto (what the switch
                                    # announces); see docs/dialects/switch-models.md
        snmp:                       # optional: CPO/CPC telemetry over SNMP
          address: 10.0.1.2         # host[:port], UDP port 161 by default
          version: 3                # 3 (default) or 2c
          user: msoctl              # v3: USM user, SHA-256 + AES-128 by default
          auth_key: file:secrets/sw-a.snmp-auth
          priv_key: file:secrets/sw-a.snmp-priv
          # v2c: community: env:SW_A_COMMUNITY
          timeout_seconds: 2
          retries: 1
        telemetry: auto             # or the surfaces it serves its optics on, most standard
                                    # first: [entity-sensor, mso-cpo]; gNMI: [openconfig] or
                                    # [sonic]; also hh3c, juniper, huawei (vendor DOM MIBs)
      - name: sw-c
        kind: switch
        transport: gnmi             # gNMI (gRPC), port 9339 by default
        address: 10.0.1.3:6030
        model: openconfig           # or sonic, or auto (from its Capabilities)
        username: msoctl
        password: env:SW_C_PASSWORD
        tls:                        # the switch's certificate checked against ca_file
          ca_file: pki/ca.pem
          cert_file: pki/msoctl.pem # optional: a client certificate, with key_file
          key_file: pki/msoctl.key
          server_name: sw-c.example # optional: the name its certificate carries
        # insecure: true            # plaintext instead of tls: labs only (a warning each time)
      - name: laser-1               # lab instruments for OCS acceptance testing
        kind: laser                 # tunable laser source (SCPI)
        transport: visa             # visa | serial
        address: TCPIP::10.0.9.10::5025::SOCKET
        reference: test-set/ocs-dut.reference.yaml  # optional: the test set's reference file
      - name: pm-1
        kind: meter                 # multiport optical power meter (SCPI)
        transport: visa
        address: TCPIP::10.0.9.11::5025::SOCKET
        channels: 64                # ports wired (1..channels)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.yamlfile import (
    LinedList,
    Section,
    YamlFileError,
    load_file,
    shown,
    unsafe_character,
    value_problem,
)
from msoctl.hosts import GpuMetricsSource, Host, parse_hosts
from msoctl.journal.location import JournalLocation, parse_location
from msoctl.links import Link, Span, parse_spans_and_links

KINDS = ("ocs", "amp", "switch", "laser", "meter")
TRANSPORTS = {"ocs": ("visa", "serial"), "amp": ("i2c-bridge", "i2c-dev", "optoe"),
              "switch": ("netconf", "gnmi", "none"), "laser": ("visa", "serial"),
              "meter": ("visa", "serial")}
UNMANAGED = "none"
"""A switch's transport when nothing of it is managed (the lab's large fabrics)."""
KIND_FIELDS = {
    "ocs": {"console", "max_switch_power_dbm", "shared_error_queue", "alarm_port"},
    "amp": {"i2c_address", "gain_slew_db_per_second", "max_gain_step_db"},
    "switch": {"username", "key_file", "known_hosts", "accept_unknown_host_keys", "snmp",
               "model", "tls", "insecure", "telemetry"},
    "laser": {"reference"},
    "meter": {"channels"},
}
DEFAULT_TIMEOUT_SECONDS = {"ocs": 5.0, "amp": 2.0, "switch": 10.0, "laser": 5.0, "meter": 5.0}
MAX_METER_CHANNELS = 1024
NETCONF_PORT = 830
GNMI_PORT = 9339
SWITCH_MODELS = ("openconfig", "sonic", "msoctl", "auto")
AUTO = "auto"
GNMI_SURFACES = ("openconfig", "sonic")
TELEMETRY_SURFACES = (*GNMI_SURFACES, "entity-sensor", "hh3c", "juniper", "huawei", "mso-cpo")
"""Where a switch serves its optics (msoctl's ``source`` names: drivers/optics)."""
MODELS_BY_TRANSPORT = {"netconf": ("msoctl", "openconfig", "auto"),
                       "gnmi": ("openconfig", "sonic", "auto")}
SNMP_PORT = 161
SNMP_AUTH_PROTOCOLS = ("sha256", "sha384", "sha512", "sha1")
SNMP_PRIV_PROTOCOLS = ("aes128", "aes192", "aes256")
_HOST_PORT = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:\[\]]+))(?::(?P<port>\d{1,5}))?$")
SECRET_FIELDS = frozenset({"password", "secret", "auth_key", "priv_key", "community"})
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
"""A device name (matched whole: ``fullmatch``)."""
DEFAULT_MAX_SWITCH_POWER_DBM = 20.0


class InventoryError(YamlFileError):
    """The inventory is missing or invalid; the message says where and why."""


@dataclass(frozen=True)
class Endpoint:
    transport: str
    address: str


@dataclass(frozen=True)
class SecretRef:
    """A reference to a secret, resolved only when it is used."""

    reference: str
    base: Path
    where: str = "inventory"

    def resolve(self) -> str:
        scheme, _, target = self.reference.partition(":")
        if scheme == "env":
            value = os.environ.get(target)
            if value is None:
                raise InventoryError(
                    f"{self.where}: secret {self.reference}: environment variable not set")
            return value
        path = Path(target) if Path(target).is_absolute() else self.base / target
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise InventoryError(
                f"{self.where}: secret {self.reference}: {error.strerror}: {path}") from None


@dataclass(frozen=True)
class NetconfAccess:
    """How to reach a switch's NETCONF server, and how to trust it."""

    host: str
    port: int
    username: str
    key_file: Path | None = None
    known_hosts: Path | None = None  # None: the user's ~/.ssh/known_hosts
    accept_unknown_host_keys: bool = False


@dataclass(frozen=True)
class GnmiAccess:
    """How to reach a switch's gNMI server, and how to trust it (TLS, unless
    ``insecure``)."""

    host: str
    port: int
    username: str | None = None
    insecure: bool = False
    ca_file: Path | None = None  # None: the system's roots
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None


@dataclass(frozen=True)
class SnmpAccess:
    """How to reach a device's SNMP agent: v3 USM (authPriv) or, where asked, v2c."""

    host: str
    port: int
    version: str  # "3" or "2c"
    user: str | None = None
    auth_key: SecretRef | None = None
    priv_key: SecretRef | None = None
    auth_protocol: str = "sha256"
    priv_protocol: str = "aes128"
    community: SecretRef | None = None
    timeout_seconds: float = 2.0
    retries: int = 1


@dataclass(frozen=True)
class Device:
    name: str
    kind: str
    endpoint: Endpoint
    timeout_seconds: float = 5.0
    labels: dict[str, str] = field(default_factory=dict)
    console: Endpoint | None = None
    max_switch_power_dbm: float = DEFAULT_MAX_SWITCH_POWER_DBM
    shared_error_queue: bool = False
    """An OCS that keeps one error queue for every client (see :mod:`drivers.ocs.driver`)."""
    i2c_address: int = 0x50
    gain_slew_db_per_second: float = 10.0
    max_gain_step_db: float = 0.5
    secrets: dict[str, SecretRef] = field(default_factory=dict)
    netconf: NetconfAccess | None = None
    gnmi: GnmiAccess | None = None
    model: str = "auto"
    """A switch's configuration model: openconfig, sonic, msoctl, or auto (asked)."""
    snmp: SnmpAccess | None = None
    telemetry: tuple[str, ...] = ("auto",)
    """Where its optics are served (``auto``: probed); see TELEMETRY_SURFACES."""
    channels: int | None = None
    """A power meter's wired ports, 1..channels."""
    reference: Path | None = None
    """A laser's test-set reference file (fan-out losses, meter patching)."""
    alarm_port: int | None = None
    """An OCS's loss-of-light alarm connection, a TCP port on its host (None: ask it)."""


@dataclass
class Inventory:
    path: Path
    devices: dict[str, Device]
    journal: JournalLocation | None = None
    spans: dict[str, Span] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    gpu_metrics: GpuMetricsSource | None = None

    @property
    def journal_path(self) -> Path | None:
        """The SQLite journal file the inventory names (None: none, or a database URL)."""
        return None if self.journal is None else self.journal.path

    def link(self, name: str) -> Link:
        try:
            return self.links[name]
        except KeyError:
            known = ", ".join(sorted(self.links)) or "none"
            raise InventoryError(f"{self.path}: no link named {name!r} (links: {known})"
                                 ) from None

    def device(self, name: str, kind: str | None = None) -> Device:
        try:
            device = self.devices[name]
        except KeyError:
            known = ", ".join(sorted(self.devices)) or "none"
            raise InventoryError(
                f"{self.path}: no device named {name!r} (devices: {known})"
            ) from None
        if kind is not None and device.kind != kind:
            raise InventoryError(f"{self.path}: device {name!r} is of kind {device.kind!r}, "
                                 f"not {kind!r}")
        return device


def _endpoint(section: Section, kind: str) -> Endpoint:
    transport = section.get("transport", str, choices=TRANSPORTS[kind])
    if transport == UNMANAGED:
        if "address" in section.data:
            raise section.error("address", "an unmanaged switch (transport none) has none")
        return Endpoint(transport, "")
    address = section.get("address", str)
    if not address.strip():
        raise section.error("address", "must not be empty")
    return Endpoint(transport, address)


def _secret(section: Section, key: str, base: Path) -> SecretRef:
    value = section.data.get(key)
    scheme, sep, target = value.partition(":") if isinstance(value, str) else ("", "", "")
    if isinstance(value, str) and unsafe_character(value) is not None:
        raise section.error(key, "must not contain control or formatting characters")
    if not sep or scheme not in ("env", "file") or not target.strip():
        # The value is not repeated: it may be the secret itself.
        raise section.error(
            key, "secrets are never written in the inventory; use env:NAME or file:PATH"
        )
    return SecretRef(str(value), base, f"{section.source}: {section.owner}: field '{key}'")


def _netconf_access(section: Section, address: str, base: Path) -> NetconfAccess:
    host, port = _host_port(section, "address", address, NETCONF_PORT)
    username = section.get("username", str)
    if not username.strip():
        raise section.error("username", "must not be empty")

    def local_path(key: str) -> Path | None:
        value = section.get(key, str, default=None)
        if value is None:
            return None
        found = Path(value).expanduser()
        return found if found.is_absolute() else base / found

    key_file = local_path("key_file")
    if key_file is None and "password" not in section.data:
        raise section.error(None, "a switch needs password (env:NAME or file:PATH) or key_file")
    return NetconfAccess(
        host=host, port=port, username=username, key_file=key_file,
        known_hosts=local_path("known_hosts"),
        accept_unknown_host_keys=section.get("accept_unknown_host_keys", bool, default=False),
    )


def _gnmi_access(section: Section, address: str, base: Path) -> GnmiAccess:
    host, port = _host_port(section, "address", address, GNMI_PORT)
    username = section.get("username", str, default=None)
    if username is not None and not username.strip():
        raise section.error("username", "must not be empty")
    for key in ("key_file", "known_hosts", "accept_unknown_host_keys"):
        if key in section.data:
            raise section.error(key, "is for NETCONF over SSH; a gNMI switch takes tls:")
    insecure = section.get("insecure", bool, default=False)
    if insecure and "tls" in section.data:
        raise section.error("insecure", "give tls or insecure: true, not both")
    files: dict[str, Path | None] = {"ca_file": None, "cert_file": None, "key_file": None}
    server_name = None
    if "tls" in section.data:
        sub = Section(section.get("tls", dict), section.source,
                      f"{section.owner} tls", line=getattr(section.data.get("tls"), "line", 0))
        sub.reject_unknown({*files, "server_name"})
        for key in files:
            value = sub.get(key, str, default=None)
            if value is not None:
                found = Path(value).expanduser()
                files[key] = found if found.is_absolute() else base / found
        if (files["cert_file"] is None) != (files["key_file"] is None):
            raise sub.error(None, "a client certificate needs cert_file and key_file together")
        server_name = sub.get("server_name", str, default=None)
    return GnmiAccess(host=host, port=port, username=username, insecure=insecure,
                      server_name=server_name, **files)


def _host_port(section: Section, key: str, address: str, default_port: int) -> tuple[str, int]:
    match = _HOST_PORT.match(address.strip())
    port = int(match["port"]) if match and match["port"] else default_port
    if match is None or not 1 <= port <= 65535:
        raise section.error(key, f"{address!r} is not host, host:port or [v6addr]:port")
    return match["v6"] or match["host"], port


def _telemetry_surfaces(section: Section, snmp: SnmpAccess | None,
                        gnmi: GnmiAccess | None) -> tuple[str, ...]:
    """A switch's ``telemetry:``: ``auto`` (the default: probe once, remember), or the
    surfaces it serves its optics on, each reachable by the entry's own sections."""
    value = section.get("telemetry", (str, list), default=AUTO)
    names = (value,) if isinstance(value, str) else tuple(str(item) for item in value)
    if names == (AUTO,):
        return names
    unknown = [name for name in names if name not in TELEMETRY_SURFACES]
    if unknown or not names or len(set(names)) != len(names):
        raise section.error("telemetry", f"must be auto or a list of distinct surfaces "
                            f"among {', '.join(TELEMETRY_SURFACES)}")
    if any(name in GNMI_SURFACES for name in names) and gnmi is None:
        raise section.error("telemetry", "openconfig and sonic telemetry are read over gNMI: "
                            "the switch needs transport: gnmi")
    if any(name not in GNMI_SURFACES for name in names) and snmp is None:
        raise section.error("telemetry", "SNMP telemetry surfaces need an snmp section")
    return names


def _snmp_access(section: Section, name: str, base: Path) -> SnmpAccess:
    sub = Section(section.get("snmp", dict), section.source, f"device {name!r} snmp",
                  line=getattr(section.data.get("snmp"), "line", 0))
    sub.reject_unknown({"address", "version", "user", "auth_key", "priv_key", "auth_protocol",
                        "priv_protocol", "community", "timeout_seconds", "retries"})
    host, port = _host_port(sub, "address", sub.get("address", str), SNMP_PORT)
    version = str(sub.get("version", (int, str), default=3))
    if version not in ("3", "2c"):
        raise sub.error("version", "must be 3 or 2c")
    timeout = sub.get("timeout_seconds", float, default=2.0)
    if not 0.05 <= timeout <= 60:
        raise sub.error("timeout_seconds", "must be between 0.05 and 60 seconds")
    retries = sub.get("retries", int, default=1)
    if not 0 <= retries <= 5:
        raise sub.error("retries", "must be 0..5")
    if version == "2c":
        for key in ("user", "auth_key", "priv_key"):
            if key in sub.data:
                raise sub.error(key, "is for SNMPv3; a v2c agent takes a community")
        if "community" not in sub.data:
            raise sub.error(None, "SNMP v2c needs community (env:NAME or file:PATH)")
        return SnmpAccess(host, port, version, community=_secret(sub, "community", base),
                          timeout_seconds=timeout, retries=retries)
    if "community" in sub.data:
        raise sub.error("community", "is for SNMP v2c; v3 takes user, auth_key, priv_key")
    missing = [key for key in ("user", "auth_key", "priv_key") if key not in sub.data]
    if missing:
        raise sub.error(None, f"SNMPv3 (authPriv) needs {', '.join(missing)}")
    return SnmpAccess(
        host, port, version, user=sub.get("user", str),
        auth_key=_secret(sub, "auth_key", base), priv_key=_secret(sub, "priv_key", base),
        auth_protocol=sub.get("auth_protocol", str, default="sha256",
                              choices=SNMP_AUTH_PROTOCOLS),
        priv_protocol=sub.get("priv_protocol", str, default="aes128",
                              choices=SNMP_PRIV_PROTOCOLS),
        timeout_seconds=timeout, retries=retries)


def parse_inventory(data: Any, path: Path) -> Inventory:
    source = str(path)
    if data is None:
        raise InventoryError(f"{source}: the file is empty")
    top = Section(data, source, "inventory")
    top.reject_unknown({"journal", "journal_password", "devices", "spans", "links", "hosts",
                        "gpu_metrics"})
    base = path.parent
    journal = _journal(top, base)
    devices: dict[str, Device] = {}
    entries = top.get("devices", list)
    lines = entries.item_lines if isinstance(entries, LinedList) else [0] * len(entries)
    for index, (item, line) in enumerate(zip(entries, lines, strict=True)):
        section = Section(item, source, f"device #{index + 1}", line=line)
        name = section.get("name", str)
        if not DEVICE_NAME.fullmatch(name):
            raise section.error("name", "must be letters, digits, '.', '_' or '-' (at most "
                                "63, starting with a letter or digit)")
        section.owner = f"device {name!r}"
        if name in devices:
            raise section.error("name", "is defined twice")
        kind = section.get("kind", str, choices=KINDS)
        allowed = {"name", "kind", "transport", "address", "timeout_seconds", "labels"}
        section.reject_unknown(allowed | KIND_FIELDS[kind] | SECRET_FIELDS)
        timeout = section.get("timeout_seconds", float, default=DEFAULT_TIMEOUT_SECONDS[kind])
        if not 0.05 <= timeout <= 600:
            raise section.error("timeout_seconds", "must be between 0.05 and 600 seconds")
        labels = section.get("labels", dict, default={})
        for key, value in labels.items():
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise section.error("labels", f"label {shown(key)} must be text")
            problem = value_problem(value) or (
                None if unsafe_character(key) is None else "its name has a control character")
            if problem is not None:
                raise section.error("labels", f"label {shown(key)}: {problem}")
        console = None
        if "console" in section.data:
            sub = Section(section.get("console", dict), source, f"device {name!r} console")
            sub.reject_unknown({"transport", "address"})
            console = _endpoint(sub, kind)
        limit = section.get("max_switch_power_dbm", float, default=DEFAULT_MAX_SWITCH_POWER_DBM)
        if not -10.0 <= limit <= 30.0:
            raise section.error("max_switch_power_dbm", "must be between -10 and 30 dBm")
        shared_error_queue = section.get("shared_error_queue", bool, default=False)
        i2c_address = section.get("i2c_address", int, default=0x50)
        if not 0x03 <= i2c_address <= 0x77:
            raise section.error("i2c_address", "must be a 7-bit address, 0x03..0x77")
        slew = section.get("gain_slew_db_per_second", float, default=10.0)
        if not 0.1 <= slew <= 1000:
            raise section.error("gain_slew_db_per_second", "must be 0.1..1000 dB/s")
        step = section.get("max_gain_step_db", float, default=0.5)
        if not 0.01 <= step <= 10:
            raise section.error("max_gain_step_db", "must be 0.01..10 dB")
        secrets = {key: _secret(section, key, base) for key in SECRET_FIELDS
                   if key in section.data}
        endpoint = _endpoint(section, kind)
        netconf = (_netconf_access(section, endpoint.address, base)
                   if kind == "switch" and endpoint.transport == "netconf" else None)
        gnmi = (_gnmi_access(section, endpoint.address, base)
                if kind == "switch" and endpoint.transport == "gnmi" else None)
        model = "auto"
        if kind == "switch" and endpoint.transport != UNMANAGED:
            model = section.get("model", str, default="auto",
                                choices=MODELS_BY_TRANSPORT[endpoint.transport])
        alarm_port = section.get("alarm_port", int, default=None)
        if alarm_port is not None and not 1 <= alarm_port <= 65535:
            raise section.error("alarm_port", "must be a TCP port, 1..65535")
        snmp = _snmp_access(section, name, base) if "snmp" in section.data else None
        telemetry = _telemetry_surfaces(section, snmp, gnmi) if kind == "switch" else (AUTO,)
        channels = None
        if kind == "meter":
            channels = section.get("channels", int)
            if not 1 <= channels <= MAX_METER_CHANNELS:
                raise section.error("channels", f"must be 1..{MAX_METER_CHANNELS}")
        reference = None
        if "reference" in section.data:
            text = section.get("reference", str)
            if not text.strip():
                raise section.error("reference", "must not be empty")
            reference = Path(text).expanduser()
            reference = reference if reference.is_absolute() else base / reference
        devices[name] = Device(
            name=name,
            kind=kind,
            endpoint=endpoint,
            timeout_seconds=timeout,
            labels={str(k): str(v) for k, v in labels.items()},
            console=console,
            max_switch_power_dbm=limit,
            shared_error_queue=shared_error_queue,
            i2c_address=i2c_address,
            gain_slew_db_per_second=slew,
            max_gain_step_db=step,
            secrets=secrets,
            netconf=netconf,
            gnmi=gnmi,
            model=model,
            snmp=snmp,
            telemetry=telemetry,
            channels=channels,
            reference=reference,
            alarm_port=alarm_port,
        )
    kinds = {name: device.kind for name, device in devices.items()}
    spans, links = parse_spans_and_links(top.data, source, kinds)
    hosts, gpu_metrics = parse_hosts(top.data, source, kinds)
    return Inventory(path=path, devices=devices, journal=journal, spans=spans, links=links,
                     hosts=hosts, gpu_metrics=gpu_metrics)


def _journal(top: Section, base: Path) -> JournalLocation | None:
    """``journal:`` (a file or a postgresql:// URL) and its ``journal_password`` reference."""
    text = top.get("journal", str, default=None)
    password = _secret(top, "journal_password", base) if "journal_password" in top.data \
        else None
    if text is None:
        if password is not None:
            raise top.error("journal_password", "is for a postgresql:// journal, and there "
                            "is no journal:")
        return None
    try:
        return parse_location(text, base=base,
                              password=None if password is None else password.resolve)
    except ValueError as error:
        raise top.error("journal", str(error)) from None


def load_inventory(path: Path) -> Inventory:
    try:
        data = load_file(path)
    except YamlFileError as error:
        raise InventoryError(str(error)) from None
    try:
        return parse_inventory(data, path)
    except InventoryError:
        raise
    except YamlFileError as error:
        raise InventoryError(str(error)) from None


def _named_inventory(text: str, where: str) -> Path:
    # An empty name is a mistake (an unset shell variable), never "the default inventory".
    if not text.strip():
        raise InventoryError(f"{where} is empty: give the inventory file")
    bad = unsafe_character(text)
    if bad is not None:
        raise InventoryError(f"{where} {text!r} contains the control character {bad}")
    return Path(text).expanduser()


def find_inventory(option: str | None) -> Path:
    """The inventory to use: ``--inventory``, then ``MSOCTL_INVENTORY``, then ./inventory.yaml.

    Raises :class:`InventoryError` when there is none, and for an empty
    ``--inventory ""`` or ``MSOCTL_INVENTORY=""`` (never taken as "not given").
    """
    found = inventory_named(option)
    if found is None:
        raise InventoryError(
            "no inventory: pass --inventory FILE or set MSOCTL_INVENTORY "
            "(`msoctl lab up` writes one for the emulated lab)"
        )
    return found


def inventory_named(option: str | None) -> Path | None:
    """Like :func:`find_inventory`, but None when no inventory is named and there is no
    ./inventory.yaml (for commands that also work without one)."""
    if option is not None:
        return _named_inventory(option, "--inventory")
    environment = os.environ.get("MSOCTL_INVENTORY")
    if environment is not None:
        return _named_inventory(environment, "MSOCTL_INVENTORY")
    local = Path("inventory.yaml")
    return local if local.exists() else None
