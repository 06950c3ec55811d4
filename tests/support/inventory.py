"""A small hand-written inventory: two OCS, an amplifier on span-1, two switches, span-1
(working, amplified) and span-2 (protection), and link-1 between sw-a and sw-b. Its
addresses lead nowhere: it is for planning, path and safety logic that reads no device."""

from __future__ import annotations

INVENTORY = """\
devices:
  - {name: ocs-a, kind: ocs, transport: visa, address: "TCPIP::127.0.0.1::1::SOCKET"}
  - {name: ocs-b, kind: ocs, transport: visa, address: "TCPIP::127.0.0.1::2::SOCKET"}
  - {name: amp-1, kind: amp, transport: i2c-bridge, address: "socket://127.0.0.1:3"}
  - {name: sw-a, kind: switch, transport: netconf, address: 127.0.0.1, username: u,
     password: "env:NOPE"}
  - {name: sw-b, kind: switch, transport: netconf, address: 127.0.0.1, username: u,
     password: "env:NOPE"}
spans:
  - name: span-1
    length_km: 30
    loss_db_per_km: 0.2
    connector_loss_db: 0.6
    a_to_b: {from: "ocs-a:121", to: "ocs-b:61", amplifier: amp-1}
    b_to_a: {from: "ocs-b:121", to: "ocs-a:61"}
  - name: span-2
    length_km: 30
    a_to_b: {from: "ocs-a:122", to: "ocs-b:62"}
    b_to_a: {from: "ocs-b:122", to: "ocs-a:62"}
links:
  - name: link-1
    a: {switch: sw-a, port: Ethernet1, tx: "ocs-a:1", rx: "ocs-a:65"}
    b: {switch: sw-b, port: Ethernet1, tx: "ocs-b:1", rx: "ocs-b:65"}
    working: span-1
    protection: span-2
    tx_power_dbm: 1.0
"""

