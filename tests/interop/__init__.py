"""Interop: the project against third-party peers (netconfd, net-snmp, smilint, pyang, libyang,
promtool and Prometheus, PostgreSQL)."""
