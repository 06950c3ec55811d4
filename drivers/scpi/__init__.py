"""SCPI: the command table format, the standard error codes and the session."""
