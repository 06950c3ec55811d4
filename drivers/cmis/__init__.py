"""CMIS (Common Management Interface Specification) for pluggable modules.

Three parts: :mod:`.codes` (value -> name), the memory map
(:mod:`.fields` and one small module per page in :mod:`.pages`), and the API
(:mod:`.module`) over one I/O seam, :class:`.io.CmisIo`.
"""
