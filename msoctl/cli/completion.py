"""``msoctl completion bash|zsh|fish``: the shell's completion script.

The script asks ``msoctl`` itself what to offer (click's completion protocol: the shell
calls it with ``_MSOCTL_COMPLETE`` set), so it completes command names and options, and
device, link and lab-fault target names from the inventory in use: ``-i`` wherever it is
written, else MSOCTL_INVENTORY, else ./inventory.yaml. A device argument offers only its
family's names (an ``ocs`` command's DEVICE, the OCS). A missing or broken inventory
completes nothing and prints nothing.

Install: ``eval "$(msoctl completion bash)"`` in ~/.bashrc,
``eval "$(msoctl completion zsh)"`` in ~/.zshrc, or
``msoctl completion fish > ~/.config/fish/completions/msoctl.fish``.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VARIABLE = "_MSOCTL_COMPLETE"  # what click derives from the program's name


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Shell completion: the script for bash, zsh or fish, names from the inventory.

    Load it with eval "$(msoctl completion bash)" (or zsh), or write the fish one
    to ~/.config/fish/completions/msoctl.fish.
    """
    root = click.get_current_context().find_root().command
    shell_class = get_completion_class(shell)
    assert shell_class is not None, shell  # click knows each of SHELLS
    click.echo(shell_class(root, {}, "msoctl", COMPLETE_VARIABLE).source())
