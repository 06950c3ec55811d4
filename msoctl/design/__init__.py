"""Network design studies: the per-port cost of a fabric, architecture against architecture.

``msoctl design cost`` sizes a GPU fabric in each of several architectures (2- and
3-tier fat-trees, rail-optimized, multi-plane, rail-only, big switches as one flat
tier, an OCS in place of the core), counts its switches, ports and links, gives each
link a cable or transceivers by reach, and prices and powers the lot from a
component table (YAML, with the source of every figure), per GPU and per NIC port,
normalized against a baseline architecture, with what-ifs (AEC in place of optics,
LPO in place of DSP modules).

Modules: :mod:`~msoctl.design.inputs` (what a study starts from),
:mod:`~msoctl.design.trees` (fat-tree counting), :mod:`~msoctl.design.architectures` (one
module per architecture and their registry), :mod:`~msoctl.design.components` (the table),
:mod:`~msoctl.design.media` (cable or transceiver per link), :mod:`~msoctl.design.cost`
(roll-ups), :mod:`~msoctl.design.study` (the comparison), :mod:`~msoctl.design.report`
(table, JSON, CSV) and :mod:`~msoctl.design.plot` (PNG). Pure arithmetic: no device is
involved.
"""
