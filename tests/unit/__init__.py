"""Unit tests: one piece of code at a time, in this process: no socket, no lab, no peer."""
