"""Page 00h: administrative information (identity). CMIS 5.2 section 8.3."""

from drivers.cmis.fields import Field

P = 0x00

IDENTIFIER_COPY = Field("identifier_copy", P, 128)
VENDOR_NAME = Field("vendor_name", P, 129, size=16, kind="str")
VENDOR_OUI = Field("vendor_oui", P, 145, size=3, kind="bytes")
PART_NUMBER = Field("part_number", P, 148, size=16, kind="str")
REVISION = Field("revision", P, 164, size=2, kind="str")
SERIAL = Field("serial", P, 166, size=16, kind="str")
DATE_CODE = Field("date_code", P, 182, size=8, kind="str", doc="YYMMDD plus a 2-char lot code")
CLEI = Field("clei", P, 190, size=10, kind="str")
POWER_CLASS = Field("power_class", P, 200, kind="bits", mask=0xE0, doc="0 means class 1")
MAX_POWER = Field("max_power", P, 201, scale=0.25, unit="watts")
LINK_LENGTH = Field("link_length", P, 202,
                    doc="cable assemblies: bits 7-6 multiplier, 5-0 base length in m; 0 for "
                        "a module whose media can be disconnected from it")
CONNECTOR_TYPE = Field("connector_type", P, 203, doc="SFF-8024 Table 4-3, codes.CONNECTOR_TYPES")
MEDIA_LANE_INFO = Field("media_lane_info", P, 210,
                        doc="bit n set: media lane n+1 is not supported (MediaLaneUnsupported)")
MEDIA_INTERFACE_TECHNOLOGY = Field("media_interface_technology", P, 212,
                                   doc="codes.MEDIA_INTERFACE_TECHNOLOGIES")
CHECKSUMMED = Field("checksummed", P, 128, size=94, kind="bytes",
                    doc="bytes 128-221, which the page checksum (222) covers")
PAGE_CHECKSUM = Field("page_checksum", P, 222,
                      doc="the low 8 bits of the sum of bytes 128-221")

FIELDS = (IDENTIFIER_COPY, VENDOR_NAME, VENDOR_OUI, PART_NUMBER, REVISION, SERIAL, DATE_CODE,
          CLEI, POWER_CLASS, MAX_POWER, LINK_LENGTH, CONNECTOR_TYPE, MEDIA_LANE_INFO,
          MEDIA_INTERFACE_TECHNOLOGY, CHECKSUMMED, PAGE_CHECKSUM)


def checksum(data: bytes) -> int:
    """The page 00h checksum of bytes 128-221 (``data``): the low 8 bits of their sum."""
    return sum(data) & 0xFF
