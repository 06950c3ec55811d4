"""The switch collector: congestion counters, buffer, and the configured thresholds.

One probe is one NETCONF session and one ``<get>`` of the module's tree
(configuration and state together, as ``msoctl switch counters`` reads it).
Counters are exported per port (``msoctl_switch_*_total``) and per queue
(``msoctl_switch_queue_*_total``); the port's counter is the switch's own
figure for the port, not a sum the exporter makes, so do not add the two.
Queue n carries IEEE 802.1p priority n (yang/msoctl-congestion.yang).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drivers.switch.models.msoctl import to_tree
from drivers.switch.netconf import SwitchSession
from drivers.switch.session import open_session
from msoctl.access import switch_target
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import COUNTER, GAUGE, Families, MetricSpec

PORT = ("device", "port")
QUEUE = ("device", "port", "queue")
SPEED_BYTES_PER_SECOND = {"100G": 100e9 / 8, "200G": 200e9 / 8, "400G": 400e9 / 8,
                          "800G": 800e9 / 8}

# (YANG leaf of the congestion-counters grouping, metric name after the prefix, help)
COUNTER_LEAVES = (
    ("ecn-marked-packets", "ecn_marked_packets_total",
     "Packets marked ECN Congestion Experienced."),
    ("switch-generated-cnps", "generated_cnps_total",
     "CNPs the switch sent back to senders itself (fast CNP)."),
    ("pfc-pause-frames-sent", "pfc_pause_frames_sent_total",
     "PFC pause frames sent to the link partner."),
    ("pfc-pause-frames-received", "pfc_pause_frames_received_total",
     "PFC pause frames received from the link partner."),
    ("dropped-packets", "dropped_packets_total",
     "Packets dropped (WRED, PFC watchdog, buffer or headroom overflow)."),
)
WATERMARK = "buffer-watermark-bytes"

PORT_COUNTERS = {leaf: MetricSpec(f"msoctl_switch_{name}", COUNTER, f"{text} Per port.", PORT)
                 for leaf, name, text in COUNTER_LEAVES}
QUEUE_COUNTERS = {leaf: MetricSpec(f"msoctl_switch_queue_{name}", COUNTER, f"{text} Per queue.",
                                   QUEUE)
                  for leaf, name, text in COUNTER_LEAVES}
PORT_WATERMARK = MetricSpec("msoctl_switch_buffer_watermark_bytes", GAUGE,
                            "Highest buffer occupancy of the port since its counters were "
                            "cleared.", PORT)
QUEUE_WATERMARK = MetricSpec("msoctl_switch_queue_buffer_watermark_bytes", GAUGE,
                             "Highest buffer occupancy of the queue since its counters were "
                             "cleared.", QUEUE)
BUFFER_SIZE = MetricSpec("msoctl_switch_buffer_size_bytes", GAUGE,
                         "The chip's whole shared packet buffer.")
LOSSLESS_POOL = MetricSpec("msoctl_switch_buffer_lossless_pool_bytes", GAUGE,
                           "The part of the buffer lossless priorities may use.")
FAST_CNP_ENABLED = MetricSpec("msoctl_switch_fast_cnp_enabled", GAUGE,
                              "1 when the switch generates CNPs itself (fast CNP).")
FAST_CNP_INTERVAL = MetricSpec("msoctl_switch_fast_cnp_min_interval_seconds", GAUGE,
                               "Configured shortest time between two CNPs for one flow.")
PORT_SPEED = MetricSpec("msoctl_switch_port_speed_bytes_per_second", GAUGE,
                        "Configured line rate of the port.", PORT)
CABLE_LENGTH = MetricSpec("msoctl_switch_port_cable_length_meters", GAUGE,
                          "Configured fiber length to the link partner (sizes PFC headroom).",
                          PORT)
LOSSLESS = MetricSpec("msoctl_switch_pfc_lossless_priority", GAUGE,
                      "1 for each priority PFC keeps lossless on the port.",
                      ("device", "port", "priority"))
XOFF = MetricSpec("msoctl_switch_pfc_xoff_bytes", GAUGE,
                  "Configured PFC headroom per lossless priority.", PORT)
XON = MetricSpec("msoctl_switch_pfc_xon_bytes", GAUGE,
                 "Configured headroom level under which the port resumes its partner.", PORT)
WATCHDOG_ENABLED = MetricSpec("msoctl_switch_pfc_watchdog_enabled", GAUGE,
                              "1 when the PFC watchdog runs on the port.", PORT)
WATCHDOG_DETECTION = MetricSpec("msoctl_switch_pfc_watchdog_detection_seconds", GAUGE,
                                "How long a priority must stay paused before the watchdog "
                                "acts.", PORT)
WRED_MIN = MetricSpec("msoctl_switch_wred_min_threshold_bytes", GAUGE,
                      "Queue depth from which packets start to be ECN-marked.", QUEUE)
WRED_MAX = MetricSpec("msoctl_switch_wred_max_threshold_bytes", GAUGE,
                      "Queue depth from which every packet is ECN-marked.", QUEUE)
WRED_PROBABILITY = MetricSpec("msoctl_switch_wred_max_mark_probability_ratio", GAUGE,
                              "Marking probability reached at the maximum threshold (0..1).",
                              QUEUE)
ECN_ENABLED = MetricSpec("msoctl_switch_ecn_enabled", GAUGE,
                         "1 when the queue marks ECN instead of dropping.", QUEUE)
QUEUE_FAST_CNP = MetricSpec("msoctl_switch_queue_fast_cnp_enabled", GAUGE,
                            "1 when the queue takes part in fast CNP.", QUEUE)

METRICS = (*PORT_COUNTERS.values(), PORT_WATERMARK, *QUEUE_COUNTERS.values(), QUEUE_WATERMARK,
           BUFFER_SIZE, LOSSLESS_POOL, FAST_CNP_ENABLED, FAST_CNP_INTERVAL, PORT_SPEED,
           CABLE_LENGTH, LOSSLESS, XOFF, XON, WATCHDOG_ENABLED, WATCHDOG_DETECTION, WRED_MIN,
           WRED_MAX, WRED_PROBABILITY, ECN_ENABLED, QUEUE_FAST_CNP)


class SwitchCollector(DeviceCollector):
    kind = "switch"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        session = open_session(switch_target(self.device, at_most_seconds=self.timeout_seconds))
        self.close_later(session.close)
        if type(session) is SwitchSession:  # the msoctl module: configuration and counters
            fill(families, self.device.name, session.get_state())
            return
        # A switch of another model: its configuration read as intent, its counters from
        # the model's own state, together in the msoctl module's shape.
        intent, state = session.read_intent_and_state()
        fill(families, self.device.name, with_counters(to_tree(intent), state))


def with_counters(config: dict[str, Any], state: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (a ``switch:`` tree) with the counters of ``state`` (as
    :func:`drivers.switch.models.base.counter_tree` gives them) on its ports and queues;
    a port or queue with counters and no configuration is added with its counters."""
    ports = config["switch"].setdefault("ports", {}).setdefault("port", [])
    configured = {port["name"]: port for port in ports}
    for counted in ((state.get("switch") or {}).get("ports") or {}).get("port", []):
        port = configured.get(counted["name"])
        if port is None:
            ports.append(counted)
            continue
        port["counters"] = counted["counters"]
        queues = port.setdefault("queues", {}).setdefault("queue", [])
        by_id = {queue["queue-id"]: queue for queue in queues}
        for queue in (counted.get("queues") or {}).get("queue", []):
            if queue["queue-id"] in by_id:
                by_id[queue["queue-id"]]["counters"] = queue["counters"]
            else:
                queues.append(queue)
    return config


def fill(families: Families, name: str, state: Mapping[str, Any]) -> None:
    """The families of a switch's ``<get>`` tree (as :meth:`SwitchSession.get_state`)."""
    top = state.get("switch") or {}
    buffer = top.get("buffer") or {}
    families.add(BUFFER_SIZE.name, buffer.get("total-bytes"), device=name)
    families.add(LOSSLESS_POOL.name, buffer.get("lossless-pool-bytes"), device=name)
    fast = top.get("fast-cnp") or {}
    families.add(FAST_CNP_ENABLED.name, fast.get("enabled"), device=name)
    interval = fast.get("min-interval-microseconds")
    families.add(FAST_CNP_INTERVAL.name, None if interval is None else interval / 1e6,
                 device=name)
    for port in (top.get("ports") or {}).get("port", []):
        where = {"device": name, "port": str(port.get("name"))}
        _counters(families, port.get("counters"), PORT_COUNTERS, PORT_WATERMARK, where)
        families.add(PORT_SPEED.name, SPEED_BYTES_PER_SECOND.get(port.get("speed", "")), **where)
        families.add(CABLE_LENGTH.name, port.get("cable-length-meters"), **where)
        for priority in port.get("lossless-priorities") or ():
            families.add(LOSSLESS.name, 1, **where, priority=priority)
        pfc = port.get("pfc") or {}
        families.add(XOFF.name, pfc.get("xoff-bytes"), **where)
        families.add(XON.name, pfc.get("xon-bytes"), **where)
        watchdog = pfc.get("watchdog") or {}
        families.add(WATCHDOG_ENABLED.name, watchdog.get("enabled"), **where)
        detection = watchdog.get("detection-time-ms")
        families.add(WATCHDOG_DETECTION.name, None if detection is None else detection / 1000,
                     **where)
        for queue in (port.get("queues") or {}).get("queue", []):
            at = {**where, "queue": str(queue.get("queue-id"))}
            _counters(families, queue.get("counters"), QUEUE_COUNTERS, QUEUE_WATERMARK, at)
            wred = queue.get("wred") or {}
            families.add(WRED_MIN.name, wred.get("min-threshold"), **at)
            families.add(WRED_MAX.name, wred.get("max-threshold"), **at)
            percent = wred.get("max-drop-probability-percent")
            families.add(WRED_PROBABILITY.name, None if percent is None else percent / 100, **at)
            families.add(ECN_ENABLED.name, wred.get("enable-ecn"), **at)
            families.add(QUEUE_FAST_CNP.name, (queue.get("fast-cnp") or {}).get("enabled"), **at)


def _counters(families: Families, counters: Mapping[str, Any] | None,
              specs: Mapping[str, MetricSpec], watermark: MetricSpec,
              where: Mapping[str, str]) -> None:
    if not counters:
        return  # configured, but the chip has no such port (or queue)
    for leaf, spec in specs.items():
        families.add(spec.name, counters.get(leaf), **where)
    families.add(watermark.name, counters.get(WATERMARK), **where)

