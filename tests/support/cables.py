"""Four links over two cables, for the tests of a cut's gathering (msoctl/protect)."""

from __future__ import annotations

from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber


def cable_links() -> list[Link]:
    """link-1..4 between ocs-a and ocs-b: link-1 and link-2 work over cable east (spans
    e-1, e-2) and are protected over cable west (w-1, w-2); link-3 works over west (w-3)
    and is protected over east (e-3); link-4 works over a span in no cable (x-4)."""

    def span(name: str, port: int, cable: str | None) -> Span:
        return Span(name, 30, 0.2, 0.5,
                    SpanFiber(OcsPort("ocs-a", port + 64), OcsPort("ocs-b", port)),
                    SpanFiber(OcsPort("ocs-b", port + 64), OcsPort("ocs-a", port)), cable)

    def link(n: int, working: Span, protection: Span) -> Link:
        return Link(f"link-{n}",
                    LinkEnd("sw-a", f"Ethernet{n}", OcsPort("ocs-a", n), OcsPort("ocs-a", 32 + n)),
                    LinkEnd("sw-b", f"Ethernet{n}", OcsPort("ocs-b", n), OcsPort("ocs-b", 32 + n)),
                    working, protection)

    return [link(1, span("e-1", 11, "east"), span("w-1", 21, "west")),
            link(2, span("e-2", 12, "east"), span("w-2", 22, "west")),
            link(3, span("w-3", 23, "west"), span("e-3", 13, "east")),
            link(4, span("x-4", 14, None), span("w-4", 24, "west"))]
