"""Conformance: one suite that every implementation of an interface passes (OCS and I2C
transports, the NETCONF emulator and netconfd, the journal's stores, the collectors), and the
drivers against their emulators at the protocol seam."""
