"""msoctl: the operator layer — CLI, inventory, plans, journal, safety rules."""

__version__ = "0.1.0"
