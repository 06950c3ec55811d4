"""The emulated lab from the operator's side: :mod:`.client` talks to a running lab's
control endpoint, :mod:`.demo` runs a lab in-process for the guided walkthrough.

The only package of msoctl that imports emulators: ``msoctl lab up`` and the demo run
the lab; nothing else in msoctl depends on it.
"""
