"""The CMIS memory map, one module per page. Offsets are CMIS 5.x byte addresses."""

from drivers.cmis.pages import lower, page00, page01, page02, page10, page11

STANDARD_PAGES = (lower, page00, page01, page02, page10, page11)

__all__ = ["STANDARD_PAGES", "lower", "page00", "page01", "page02", "page10", "page11"]
