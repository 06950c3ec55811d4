"""Page 00h: administrative information (identity)."""

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

FIELDS = (IDENTIFIER_COPY, VENDOR_NAME, VENDOR_OUI, PART_NUMBER, REVISION, SERIAL, DATE_CODE,
          CLEI, POWER_CLASS, MAX_POWER)
