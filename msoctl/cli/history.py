"""``msoctl history``: the journal, one line per change."""

from __future__ import annotations

from typing import Any

import click

from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option, table
from msoctl.cli.types import DEVICE, TEXT, Count
from msoctl.journal import Operation

_RECORD_KEYS = frozenset({"ts", "op", "event", "device", "action", "user", "host", "pid",
                          "before", "current", "wanted", "method"})


def _summary(operation: Operation) -> str:
    intent = operation.intent
    if intent.get("event") == "refused":
        return str(intent.get("reason", ""))
    changes = intent.get("changes")
    if isinstance(changes, list):
        added = [f"+{c['ingress']}:{c['egress']}" for c in changes if c.get("action") == "add"]
        removed = [f"-{c['ingress']}:{c['egress']}" for c in changes
                   if c.get("action") == "remove"]
        parts = removed + added
        text = " ".join(parts[:6]) + (f" (+{len(parts) - 6} more)" if len(parts) > 6 else "")
        return text or "no change needed"
    if "ports" in intent:
        return "ports " + ",".join(map(str, intent["ports"]))
    settings = {k: v for k, v in intent.items() if k not in _RECORD_KEYS and v is not None}
    return " ".join(f"{k}={v}" for k, v in settings.items() if not isinstance(v, dict | list))


def _outcome(operation: Operation) -> str:
    result = operation.result or {}
    notes = [r for r in operation.records if r.get("event") in ("override", "recovered")]
    text = ""
    if result.get("error"):
        text = _device_once(str(result["error"]), operation.device)
        if result.get("found") is not None:
            text += f"; {_found(result['found'])}"
    elif result.get("status") == "interrupted" and result.get("signal"):
        text = f"{result['signal']}; {_found(result.get('found'))}"
    elif result.get("status") == "interrupted":
        text = f"resolved by {result.get('resolved_by')}: {_found(result.get('found'))}"
    elif result.get("summary"):  # a change that sums up its own outcome (protection)
        text = str(result["summary"])
    for note in notes:
        if note["event"] == "override":
            text += f" [override: {note.get('reason')}]"
        else:
            text += f" [recovered {note.get('interrupted_op')}]"
    return text.strip()


def _device_once(error: str, device: str) -> str:
    """A recorded error (``DeviceTimeout: sw-b: no reply``) without the device its row
    already names: ``DeviceTimeout: no reply``."""
    kind, sep, rest = error.partition(": ")
    if sep and rest.startswith(f"{device}: "):
        return f"{kind}: {rest[len(device) + 2:]}"
    return error[len(device) + 2:] if error.startswith(f"{device}: ") else error


def _found(found: Any) -> str:
    """What an interrupted change left on the device, as its read-back said."""
    if isinstance(found, dict):
        text = f"found {found.get('state', 'unknown')}"
        return text + (f" ({found['error']})" if found.get("error") else "")
    return str(found)


def _as_dict(operation: Operation) -> dict[str, Any]:
    result = operation.result or {}
    return {
        "op": operation.op,
        "started": operation.started,
        "device": operation.device,
        "action": operation.action,
        "status": operation.status,
        "user": operation.intent.get("user"),
        "host": operation.intent.get("host"),
        "pid": operation.intent.get("pid"),
        "summary": _summary(operation),
        "duration_seconds": result.get("duration_seconds"),
        "error": result.get("error"),
        "records": operation.records,
    }


ACTION_KINDS = ("amp", "fabric", "link", "ocs", "protection", "switch")
"""What every journaled action starts with (``ocs.apply``, ``protection.switch``): a
``--kind`` of another is a mistake, not a filter that finds nothing."""


@click.command()
@click.option("--device", "device", metavar="NAME", type=DEVICE, help="Only this device.")
@click.option("-n", "limit", type=Count(1, 1_000_000), default=20, show_default=True,
              help="The last N changes.")
@click.option("--kind", "kind", metavar="PREFIX", type=TEXT,
              help="Only actions starting with this (ocs, ocs.apply, ...).")
@output_option
@pass_context
def history(ctx: Context, device: str | None, limit: int, kind: str | None, output: str) -> None:
    """Changes from the journal: who did what to which device, and how it ended.

    The table shows when (month, day and time to the second, UTC), the device, the
    action, how it ended, who did it and one detail: the outcome when there is one,
    else the change. -o wide shows the year and milliseconds, the host and process,
    and the change and the outcome apart.
    """
    if kind is not None and kind.split(".")[0] not in ACTION_KINDS:
        raise click.BadParameter(f"{kind!r}: no action is of that kind; actions start with "
                                 f"{', '.join(ACTION_KINDS)}", param_hint="'--kind'")
    journal = ctx.journal
    # one index lookup: the newest N of the device / action prefix, never the whole history
    operations = journal.operations(device, action_prefix=kind or None, newest=limit)
    if output in DOCUMENTS:
        emit({"journal": journal.where, "operations": [_as_dict(o) for o in operations]},
             output)
        return
    if not operations:
        click.echo(f"no changes in {journal.where}")
        return
    if output == "wide":
        click.echo(table(
            ["time", "device", "action", "status", "user", "host", "pid", "change", "outcome"],
            [[_time(o, 23), o.device, o.action, o.status, o.intent.get("user"),
              o.intent.get("host"), o.intent.get("pid"), _summary(o), _outcome(o)]
             for o in operations]))
        return
    click.echo(table(
        ["time", "device", "action", "status", "user", "detail"],
        [[_time(o, 19)[5:], o.device, o.action, o.status, o.intent.get("user"),
          _outcome(o) or _summary(o)] for o in operations],
        cut=("detail",), wrap=("detail",), wrap_lines=2))


def _time(operation: Operation, length: int) -> str:
    return operation.started.replace("T", " ")[:length]
