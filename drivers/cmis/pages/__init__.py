"""The CMIS memory map, one module per page. Offsets are CMIS 5.x byte addresses."""

from drivers.cmis.pages import lower, page00, page01, page02, page10, page11

STANDARD_PAGES = (lower, page00, page01, page02, page10, page11)
STANDARD_FIELDS = tuple(f for page in STANDARD_PAGES for f in page.FIELDS)

__all__ = ["STANDARD_FIELDS", "STANDARD_PAGES", "lower", "page00", "page01", "page02", "page10",
           "page11"]
