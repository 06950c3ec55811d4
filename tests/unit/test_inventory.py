"""The inventory: what loads, what is refused, and how each refusal names file, line and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from drivers.yamlfile import load_text
from msoctl.inventory import (
    DEFAULT_MAX_SWITCH_POWER_DBM,
    InventoryError,
    find_inventory,
    load_inventory,
)

VALID = """\
journal: state/journal.sqlite
devices:
  - name: ocs-a
    kind: ocs
    transport: visa
    address: TCPIP::10.0.0.5::5025::SOCKET
    timeout_seconds: 2.5
    labels: {campus: a, rack: 7}
    max_switch_power_dbm: 12
    console:
      transport: serial
      address: /dev/ttyUSB0
  - name: ocs-b
    kind: ocs
    transport: serial
    address: socket://127.0.0.1:7000
"""


def write(directory: Path, text: str, name: str = "inventory.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def device_yaml(extra: str = "", *, name: str = "ocs-a", kind: str = "ocs",
                transport: str = "visa", address: str | None = "TCPIP::h::5025::SOCKET") -> str:
    """One device entry starting on line 2 of the file (after ``devices:``)."""
    lines = [f"  - name: {name}", f"    kind: {kind}", f"    transport: {transport}"]
    if address is not None:
        lines.append(f"    address: {address}")
    lines.extend(f"    {line}" for line in textwrap.dedent(extra).splitlines() if line.strip())
    return "\n".join(lines) + "\n"


def refused(path: Path) -> str:
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    return str(caught.value)


def assert_names(message: str, path: Path, line: int, device: str, field: str) -> None:
    assert message.startswith(f"{path}:{line}: "), message
    assert f"device '{device}'" in message, message
    assert f"'{field}'" in message, message


# ---- what loads -----------------------------------------------------------------------------


def test_valid_inventory_loads_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    inventory = load_inventory(path)

    assert list(inventory.devices) == ["ocs-a", "ocs-b"]
    a = inventory.devices["ocs-a"]
    assert (a.kind, a.endpoint.transport, a.endpoint.address) == (
        "ocs", "visa", "TCPIP::10.0.0.5::5025::SOCKET")
    assert a.timeout_seconds == 2.5
    assert a.labels == {"campus": "a", "rack": "7"}
    assert a.console is not None
    assert (a.console.transport, a.console.address) == ("serial", "/dev/ttyUSB0")
    assert a.max_switch_power_dbm == 12.0
    assert a.secrets == {}

    b = inventory.devices["ocs-b"]
    assert (b.endpoint.transport, b.endpoint.address) == ("serial", "socket://127.0.0.1:7000")
    assert b.console is None
    assert b.labels == {}
    assert b.timeout_seconds == 5.0
    assert b.max_switch_power_dbm == DEFAULT_MAX_SWITCH_POWER_DBM == 20.0


def test_journal_path_is_relative_to_the_inventory_file(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, VALID)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_inventory(path).journal_path == tmp_path / "state" / "journal.sqlite"


def test_absolute_journal_path_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "abs" / "j.jsonl"
    path = write(tmp_path, f"journal: {target}\ndevices: []\n")
    assert load_inventory(path).journal_path == target


def test_no_journal_field_means_none(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml())
    assert load_inventory(path).journal_path is None


def test_device_lookup_by_name_and_kind(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, VALID))
    assert inventory.device("ocs-b", "ocs").name == "ocs-b"
    with pytest.raises(InventoryError) as caught:
        inventory.device("ocs-z")
    message = str(caught.value)
    assert "'ocs-z'" in message
    assert "ocs-a, ocs-b" in message
    assert str(inventory.path) in message


# ---- YAML 1.1 sexagesimal numbers ---------------------------------------------------------


@pytest.mark.parametrize("text", ["1:21", "1:30.5", "64:128"])
def test_sexagesimal_looking_values_stay_text(text: str) -> None:
    assert load_text(f"pair: {text}", "<test>") == {"pair": text}


def test_plain_numbers_still_load_as_numbers() -> None:
    loaded = load_text("a: 81\nb: 2.5\nc: 0x10\nd: -3\ne: .inf\n", "<test>")
    assert loaded == {"a": 81, "b": 2.5, "c": 16, "d": -3, "e": float("inf")}
    assert isinstance(loaded["a"], int)
    assert isinstance(loaded["b"], float)


def test_label_written_as_port_pair_is_not_turned_into_a_number(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("labels: {pair: 1:21, span: 1:30.5}"))
    labels = load_inventory(path).devices["ocs-a"].labels
    assert labels == {"pair": "1:21", "span": "1:30.5"}


@pytest.mark.parametrize("value", ["1:21", "1:30.0"])
def test_sexagesimal_timeout_is_refused_not_converted(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"timeout_seconds: {value}"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "timeout_seconds")
    assert "must be a number" in message
    assert repr(value) in message


# ---- what is refused, and where ------------------------------------------------------------


def test_unknown_kind(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(kind="toaster"))
    message = refused(path)
    assert_names(message, path, 3, "ocs-a", "kind")
    assert "'toaster'" in message
    assert "ocs" in message


def test_unknown_transport(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(transport="telnet"))
    message = refused(path)
    assert_names(message, path, 4, "ocs-a", "transport")
    assert "visa, serial" in message
    assert "'telnet'" in message


def test_unknown_console_transport(tmp_path: Path) -> None:
    extra = "console:\n  transport: carrier-pigeon\n  address: /dev/ttyUSB0"
    path = write(tmp_path, "devices:\n" + device_yaml(extra))
    message = refused(path)
    assert_names(message, path, 7, "ocs-a", "transport")
    assert "console" in message


def test_missing_address(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(address=None))
    message = refused(path)
    assert_names(message, path, 2, "ocs-a", "address")
    assert "required" in message


def test_empty_address(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(address='"  "'))
    message = refused(path)
    assert_names(message, path, 5, "ocs-a", "address")
    assert "empty" in message


def test_unknown_field(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("colour: blue"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "colour")
    assert "unknown field" in message
    assert "address" in message  # lists the fields that are known


def test_unknown_top_level_field(tmp_path: Path) -> None:
    path = write(tmp_path, "devics: []\n")
    message = refused(path)
    assert message.startswith(f"{path}:1: ")
    assert "'devics'" in message
    assert "unknown field" in message


def test_duplicate_device_names(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml() + device_yaml(address="other"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "name")
    assert "twice" in message


def test_bad_device_name(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(name='"ocs a/1"'))
    message = refused(path)
    assert message.startswith(f"{path}:2: ")
    assert "'name'" in message


def test_timeout_as_text(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("timeout_seconds: five"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "timeout_seconds")
    assert "must be a number" in message
    assert "'five'" in message


def test_timeout_as_boolean(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("timeout_seconds: true"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "timeout_seconds")


def test_labels_as_list(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("labels: [campus-a]"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "labels")
    assert "must be a mapping" in message


def test_label_value_not_text(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("labels: {campus: [a, b]}"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "labels")
    assert "'campus'" in message


@pytest.mark.parametrize("timeout", ["0", "0.01", "601", "-1", ".nan", ".inf"])
def test_timeout_out_of_range(tmp_path: Path, timeout: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"timeout_seconds: {timeout}"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", "timeout_seconds")
    assert ("must be a finite number" if "." in timeout[:1] else "between") in message


@pytest.mark.parametrize("timeout", ["0.05", "600", "1"])
def test_timeout_at_the_limits_is_accepted(tmp_path: Path, timeout: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"timeout_seconds: {timeout}"))
    assert load_inventory(path).devices["ocs-a"].timeout_seconds == float(timeout)


@pytest.mark.parametrize("limit", ["31", "-11", ".nan"])
def test_max_switch_power_out_of_range(tmp_path: Path, limit: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"max_switch_power_dbm: {limit}"))
    assert_names(refused(path), path, 6, "ocs-a", "max_switch_power_dbm")


def test_device_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  - just-a-name\n")
    message = refused(path)
    assert message.startswith(f"{path}:2: ")
    assert "device #1" in message
    assert "mapping" in message


def test_devices_not_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "devices: {ocs-a: {}}\n")
    message = refused(path)
    assert message.startswith(f"{path}:1: ")
    assert "'devices'" in message
    assert "must be a list" in message


# ---- secrets -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["password", "community", "auth_key"])
def test_literal_secret_is_refused_and_not_echoed(tmp_path: Path, key: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"{key}: hunter2"))
    message = refused(path)
    assert_names(message, path, 6, "ocs-a", key)
    assert "env:NAME or file:PATH" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("value", ['"env:"', '"file:"', "vault:secret/x", "http://x"])
def test_malformed_secret_reference_is_refused(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(f"password: {value}"))
    assert_names(refused(path), path, 6, "ocs-a", "password")


def test_env_secret_is_accepted_and_resolves_on_use(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MSOCTL_TEST_OCS_PASSWORD", raising=False)
    path = write(tmp_path, "devices:\n" + device_yaml("password: env:MSOCTL_TEST_OCS_PASSWORD"))
    secret = load_inventory(path).devices["ocs-a"].secrets["password"]
    assert secret.reference == "env:MSOCTL_TEST_OCS_PASSWORD"

    with pytest.raises(InventoryError) as caught:
        secret.resolve()
    assert "MSOCTL_TEST_OCS_PASSWORD" in str(caught.value)
    assert "not set" in str(caught.value)

    monkeypatch.setenv("MSOCTL_TEST_OCS_PASSWORD", "s3cret")
    assert secret.resolve() == "s3cret"


def test_file_secret_is_relative_to_the_inventory(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "secret.txt").write_text("s3cret\n", encoding="utf-8")
    path = write(tmp_path, "devices:\n" + device_yaml("password: file:secret.txt"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    secret = load_inventory(path).devices["ocs-a"].secrets["password"]
    assert secret.resolve() == "s3cret"  # trailing newline stripped


def test_missing_secret_file_names_the_path(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("password: file:nope.txt"))
    secret = load_inventory(path).devices["ocs-a"].secrets["password"]
    with pytest.raises(InventoryError) as caught:
        secret.resolve()
    assert str(tmp_path / "nope.txt") in str(caught.value)


# ---- files that are not inventories -------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "# nothing but a comment\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    message = refused(path)
    assert message.startswith(str(path))
    assert "empty" in message


def test_not_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  - name: ocs-a\n    kind: [ocs\n  - name: b\n")
    message = refused(path)
    assert message.startswith(f"{path}:")
    line = int(message[len(str(path)) + 1:].split(":", 1)[0])
    assert 3 <= line <= 4
    assert "not valid YAML" in message


def test_duplicate_key_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml("kind: ocs"))
    message = refused(path)
    assert message.startswith(f"{path}:6: ")
    assert "duplicate key 'kind'" in message


def test_top_level_list_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "- name: ocs-a\n")
    message = refused(path)
    assert message.startswith(f"{path}:1: ")
    assert "mapping" in message


def test_directory_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path)
    assert message.startswith(str(tmp_path))
    assert "cannot read" in message


def test_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    message = refused(path)
    assert message == f"{path}: no such file"


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    message = refused(path)
    assert message.startswith(str(path))


# ---- which inventory ----------------------------------------------------------------------


@pytest.fixture
def in_empty_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("MSOCTL_INVENTORY", raising=False)
    return workdir


def test_find_inventory_option_wins(in_empty_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (in_empty_dir / "inventory.yaml").write_text("devices: []\n")
    monkeypatch.setenv("MSOCTL_INVENTORY", "/from/env.yaml")
    assert find_inventory("/from/option.yaml") == Path("/from/option.yaml")


def test_find_inventory_env_before_local_file(in_empty_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (in_empty_dir / "inventory.yaml").write_text("devices: []\n")
    monkeypatch.setenv("MSOCTL_INVENTORY", "/from/env.yaml")
    assert find_inventory(None) == Path("/from/env.yaml")


def test_find_inventory_local_file(in_empty_dir: Path) -> None:
    (in_empty_dir / "inventory.yaml").write_text("devices: []\n")
    found = find_inventory(None)
    assert found.resolve() == (in_empty_dir / "inventory.yaml").resolve()


def test_find_inventory_expands_home(in_empty_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(in_empty_dir))
    assert find_inventory("~/inv.yaml") == in_empty_dir / "inv.yaml"


def test_find_inventory_none_is_a_clear_error(in_empty_dir: Path) -> None:
    with pytest.raises(InventoryError) as caught:
        find_inventory(None)
    message = str(caught.value)
    assert message.startswith("no inventory")
    assert "--inventory" in message
    assert "MSOCTL_INVENTORY" in message


# ---- switches: NETCONF access and SNMP telemetry ------------------------------------------

SWITCH = """\
devices:
  - name: sw-a
    kind: switch
    transport: netconf
    address: 10.0.1.2
    username: msoctl
    password: file:secrets/sw-a.password
    known_hosts: known_hosts
"""


def test_switch_netconf_and_snmp(tmp_path: Path) -> None:
    path = write(tmp_path, SWITCH + """\
    snmp:
      address: "[::1]:1161"
      user: msoctl
      auth_key: file:secrets/a
      priv_key: env:PRIV
""")
    device = load_inventory(path).device("sw-a", "switch")
    assert device.netconf is not None and device.snmp is not None
    assert (device.netconf.host, device.netconf.port) == ("10.0.1.2", 830)
    assert device.netconf.known_hosts == tmp_path / "known_hosts"
    assert not device.netconf.accept_unknown_host_keys
    snmp = device.snmp
    assert (snmp.host, snmp.port, snmp.version, snmp.user) == ("::1", 1161, "3", "msoctl")
    assert (snmp.auth_protocol, snmp.priv_protocol) == ("sha256", "aes128")
    assert snmp.auth_key is not None and snmp.auth_key.reference == "file:secrets/a"


@pytest.mark.parametrize(("snmp", "message"), [
    ("    snmp: {address: h, user: u, auth_key: 'file:a'}\n", "needs priv_key"),
    ("    snmp: {address: h, version: 2c}\n", "needs community"),
    ("    snmp: {address: h, version: 2c, community: public}\n", "never written"),
    ("    snmp: {address: h, version: 1, community: 'env:C'}\n", "must be 3 or 2c"),
    ("    snmp: {address: 'h:70000', version: 2c, community: 'env:C'}\n", "not host"),
    ("    snmp: {address: h, version: 2c, community: 'env:C', user: u}\n", "for SNMPv3"),
    ("    snmp: {address: h, user: u, auth_key: 'env:A', priv_key: 'env:P', "
     "auth_protocol: md5}\n", "must be one of"),
])
def test_bad_snmp_sections(tmp_path: Path, snmp: str, message: str) -> None:
    path = write(tmp_path, SWITCH + snmp)
    with pytest.raises(InventoryError, match=message):
        load_inventory(path)


@pytest.mark.parametrize(("extra", "message"), [
    ("", None),
    ("    accept_unknown_host_keys: yes\n", "must be"),
])
def test_switch_fields(tmp_path: Path, extra: str, message: str | None) -> None:
    path = write(tmp_path, SWITCH + extra)
    if message is None:
        load_inventory(path)
        return
    with pytest.raises(InventoryError, match=message):
        load_inventory(path)


def test_switch_needs_a_way_to_log_in(tmp_path: Path) -> None:
    path = write(tmp_path, SWITCH.replace("    password: file:secrets/sw-a.password\n", ""))
    with pytest.raises(InventoryError, match="needs password"):
        load_inventory(path)


# ---- switches over gNMI, and their models --------------------------------------------------


def test_a_gnmi_switch_loads_with_its_model_and_tls(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(
        """\
        model: openconfig
        username: msoctl
        password: env:SW_C
        tls: {ca_file: pki/ca.pem, cert_file: /etc/msoctl/me.pem, key_file: me.key,
              server_name: sw-c.example}
        """, name="sw-c", kind="switch", transport="gnmi", address="10.0.1.3"))
    device = load_inventory(path).device("sw-c", "switch")
    assert device.model == "openconfig" and device.netconf is None
    access = device.gnmi
    assert access is not None
    assert (access.host, access.port, access.username) == ("10.0.1.3", 9339, "msoctl")
    assert access.ca_file == tmp_path / "pki" / "ca.pem"
    assert access.cert_file == Path("/etc/msoctl/me.pem")
    assert access.key_file == tmp_path / "me.key"
    assert (access.server_name, access.insecure) == ("sw-c.example", False)


def test_a_netconf_switch_takes_auto_by_default_and_openconfig_or_msoctl(tmp_path: Path) -> None:
    base = "username: u\npassword: env:P\n"
    plain = write(tmp_path, "devices:\n" + device_yaml(base, name="sw-a", kind="switch",
                                                       transport="netconf", address="h"))
    assert load_inventory(plain).device("sw-a").model == "auto"
    for model in ("openconfig", "msoctl"):
        path = write(tmp_path, "devices:\n" + device_yaml(
            base + f"model: {model}\n", name="sw-a", kind="switch", transport="netconf",
            address="h"))
        assert load_inventory(path).device("sw-a").model == model


@pytest.mark.parametrize(("transport", "extra", "field", "message"), [
    ("netconf", "username: u\npassword: env:P\nmodel: sonic\n", "model",
     "must be one of msoctl, openconfig, auto"),
    ("gnmi", "model: msoctl\n", "model", "must be one of openconfig, sonic, auto"),
    ("gnmi", "insecure: true\ntls: {ca_file: ca.pem}\n", "insecure",
     "give tls or insecure: true, not both"),
    ("gnmi", "tls: {cert_file: me.pem}\n", "tls", "cert_file and key_file together"),
    ("gnmi", "tls: {ca: ca.pem}\n", "ca", "unknown"),
    ("gnmi", "known_hosts: known_hosts\n", "known_hosts", "a gNMI switch takes tls:"),
    ("gnmi", "password: hunter2\n", "password", "secrets are never written"),
])
def test_bad_switch_access_is_one_error_naming_the_field(
        tmp_path: Path, transport: str, extra: str, field: str, message: str) -> None:
    path = write(tmp_path, "devices:\n" + device_yaml(extra, name="sw-c", kind="switch",
                                                      transport=transport, address="h"))
    error = refused(path)
    assert f"'{field}'" in error or field in error, error
    assert message in error, error
    assert "\n" not in error
