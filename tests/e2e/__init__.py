"""End to end: the lab and the CLI against it, crash safety and interrupts, the demo and the
wheel."""
