"""Device side of SCPI: a program-message parser and line servers (TCP, pty)."""
