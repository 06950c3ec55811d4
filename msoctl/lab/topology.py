"""``msoctl lab topology generate``: write the topology file of a large fabric
(emulators/lab/generate.py builds it; this turns its refusals into the CLI's errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from drivers.errors import ValidationError
from emulators.lab.generate import FabricDoesNotFit, FabricSpec, generate, render, summary
from msoctl.outfile import write_output


def write_topology(path: Path | None, command: str, **arguments: Any) -> str:
    """Write the topology of the fabric ``arguments`` describe (the fields of
    :class:`~emulators.lab.generate.FabricSpec`) to ``path`` (atomically: written beside,
    then renamed), or return its text when ``path`` is None; returns the summary line
    when written. Raises :class:`ValidationError` for a fabric that cannot be built (an
    argument out of range, or ports that run out)."""
    spec = FabricSpec(**arguments)
    try:
        document = generate(spec)
        text = render(document, spec, command)
    except FabricDoesNotFit as error:
        raise ValidationError(str(error)) from None
    except ValueError as error:
        raise ValidationError(f"cannot generate this fabric: {error}") from None
    if path is None:
        return text
    write_output(path, text)
    return summary(document, spec)
