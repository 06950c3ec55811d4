"""Costs and power from the component table: hand-priced small fabrics, the what-ifs,
the OCS's insertion loss, and a published comparison reproduced.

The published comparison is DeepSeek-AI, "Insights into DeepSeek-V3: Scaling
Challenges and Reflections on Hardware for AI Architectures" (ISCA 2025, arXiv
2505.09343), section 5.1 and its topology cost table: a 2-tier multi-plane fat-tree
of 16,384 endpoints (768 switches, 16,384 links, 4.39 k USD per endpoint) against a
3-tier fat-tree of 65,536 (5,120 switches, 131,072 links, 7.5 k USD per endpoint),
64-port 400G switches. Run through the command line with the shipped profile of
that paper's assumptions (``--profile deepseek-v3``).

Hand-priced fabrics lay a file of quotes over the default table with every price
the test depends on written in this file, so the expected sums read from the text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msoctl.design.architectures import ARCHITECTURES
from msoctl.design.components import load_table
from msoctl.design.cost import Costing, cost
from msoctl.design.inputs import FabricInputs
from tests.support import Msoctl, in_process

QUOTES = """\
switches:
  sw-4x400g: {ports: 4, speed_gbps: 400, usd: 1000, watts: 100, latency_ns: 400}
  sw-4x800g: {ports: 4, speed_gbps: 800, usd: 2000, watts: 200, latency_ns: 400}
media:
  dac-400g: {usd: 100, watts: 0.1}
  aec-400g: {usd: 300, watts: 5}
  aoc-400g: {usd: 500, watts: 8}
  dsp-400g-dr4: {usd: 400, watts: 9}
  dsp-400g-fr4: {usd: 600, watts: 10}
  lpo-400g-dr4: {usd: 250, watts: 5}
  dac-800g: {usd: 200, watts: 0.1}
  aec-800g: {usd: 450, watts: 12}
  aoc-800g: {usd: 900, watts: 14}
  dsp-800g-dr8: {usd: 1000, watts: 15}
  dsp-800g-2fr4: {usd: 1300, watts: 16}
  lpo-800g-dr8: {usd: 700, watts: 8}
ocs: {ports: 8, usd_per_port: 50, watts_per_port: 1}
"""
"""Row links (30 m) at 400G: AOC 500 < two DR4 at 800, so AOC. Rack links (3 m): DAC
(3 m reach) at 100. Building links (500 m): two DR4 at 400 each."""


@pytest.fixture(scope="module")
def quotes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quotes") / "quotes.yaml"
    path.write_text(QUOTES)
    return path


def priced(architecture: str, quotes: Path, what_if: frozenset[str] = frozenset(),
           text: str = "", **shape: object) -> Costing:
    """``architecture`` built from ``shape`` and priced with QUOTES (or ``text``)."""
    path = quotes
    if text:
        path = quotes.with_name("changed.yaml")
        path.write_text(text)
    table = load_table(overrides=path)
    inputs = FabricInputs(**shape)  # type: ignore[arg-type]
    inputs.check()
    return cost(ARCHITECTURES[architecture].build(inputs, table), inputs, table, what_if)


def media(costing: Costing) -> dict[str, tuple[str | None, int]]:
    return {g.role: (None if g.medium is None else g.medium.name, g.units)
            for g in costing.links}


def test_a_two_tier_fabric_priced_by_hand(quotes: Path) -> None:
    """k = 4, 8 GPUs: 4 + 2 switches at 1,000 USD and 100 W; 8 NIC links in the rack on
    DAC (100 USD, 0.1 W); 8 leaf-spine links across the row on AOC (500 USD, 8 W).
    6,000 + 800 + 4,000 = 10,800 USD, 1,350 per GPU; 600 + 0.8 + 64 = 664.8 W.
    Latency: 3 switches x 400 ns + (3 + 30 + 30 + 3) m x 4.9 ns/m = 1,523.4 ns."""
    costing = priced("fat-tree-2", quotes, gpus=8, gpus_per_server=1, radix=4)
    assert media(costing) == {"endpoint": ("dac-400g", 8), "leaf-spine": ("aoc-400g", 8)}
    assert costing.usd == pytest.approx(10_800)
    assert costing.watts == pytest.approx(664.8)
    assert (costing.transceivers, costing.cables) == (0, 16)
    assert costing.latency_ns == pytest.approx(1523.4)


def test_transceivers_are_two_per_optical_link(quotes: Path) -> None:
    """k = 4, 16 GPUs in three tiers: 20 switches (20,000 USD); 16 NIC links on DAC
    (1,600), 16 edge-aggregation on AOC (8,000), 16 aggregation-core links across the
    building on two DR4 each: 32 x 400 = 12,800. 42,400 USD in all."""
    costing = priced("fat-tree-3", quotes, gpus=16, gpus_per_server=1, radix=4)
    assert media(costing)["aggregation-core"] == ("dsp-400g-dr4", 32)
    assert costing.usd == pytest.approx(20_000 + 1_600 + 8_000 + 12_800)
    assert costing.transceivers == 32


def test_what_ifs_lower_the_cost_where_they_should(quotes: Path) -> None:
    """At 800G a passive DAC reaches 2 m, short of the rack's 3 m: the NIC links take
    AOC (900 < 2 x 1,000). AEC (7 m, 450) takes their place; it cannot reach across a
    row (30 m), so the edge-aggregation AOCs stay. LPO (700) takes the DR8 modules'
    place on the 500 m aggregation-core links. k = 4, 16 GPUs at 800G:
    as is 16 x 900 + 16 x 900 + 32 x 1,000 = 60,800 USD of links;
    aec: the 16 NIC links save 16 x 450 = 7,200; lpo: 32 x 300 = 9,600; both: 16,800."""
    shape = {"gpus": 16, "gpus_per_server": 1, "radix": 4, "nic_speed_gbps": 800,
             "switch_speed_gbps": 800}
    base = priced("fat-tree-3", quotes, **shape)
    aec = priced("fat-tree-3", quotes, frozenset({"aec"}), **shape)
    lpo = priced("fat-tree-3", quotes, frozenset({"lpo"}), **shape)
    both = priced("fat-tree-3", quotes, frozenset({"aec", "lpo"}), **shape)
    assert base.links_usd == pytest.approx(60_800)
    assert media(aec) == {"endpoint": ("aec-800g", 16), "edge-aggregation": ("aoc-800g", 16),
                          "aggregation-core": ("dsp-800g-dr8", 32)}
    assert media(lpo)["aggregation-core"] == ("lpo-800g-dr8", 32)
    assert base.usd - aec.usd == pytest.approx(7_200)
    assert base.usd - lpo.usd == pytest.approx(9_600)
    assert base.usd - both.usd == pytest.approx(16_800)
    assert both.watts < lpo.watts < base.watts  # LPO 8 W against DSP 15 W per module
    assert aec.watts < base.watts  # AEC 12 W against AOC 14 W per cable


def test_the_ocs_insertion_loss_calls_for_longer_reach_modules(quotes: Path) -> None:
    """An aggregation switch's uplink ends on an OCS port; the light goes on to another
    pod, so module to module it travels twice the building class. With the class at
    200 m (400 m, within DR4's 500 m) the loss is 0.4 km x 0.5 dB/km + 2.0 dB (OCS) +
    2 x 0.5 dB (its connectors) = 3.2 dB, over DR4's 3 dB budget: FR4 (4 dB). An OCS of
    1.0 dB makes it 2.2 dB and DR4 fits. One module per uplink either way; the OCS
    ports are paid all: k = 4, 16 GPUs, 4 pods of 4 uplinks, one OCS of 8 ports takes
    floor(8 / 4) = 2 per pod: ceil(4 / 2) = 2 OCS, 16 ports at 50 USD."""
    shorter = QUOTES + "reach_classes:\n  building: {length_m: 200}\n"
    lossy = priced("ocs-spine", quotes, text=shorter, gpus=16, gpus_per_server=1, radix=4)
    assert media(lossy)["aggregation-ocs"] == ("dsp-400g-fr4", 16)
    uplinks = next(g for g in lossy.links if g.role == "aggregation-ocs")
    assert (uplinks.span.distance_m, uplinks.span.loss_db) == (400, pytest.approx(3.2))
    ocs = next(t for t in lossy.tiers if t.tier.kind == "ocs")
    assert (ocs.tier.count, ocs.usd) == (2, 16 * 50)
    better = shorter.replace("watts_per_port: 1}", "watts_per_port: 1, insertion_loss_db: 1.0}")
    clear = priced("ocs-spine", quotes, text=better, gpus=16, gpus_per_server=1, radix=4)
    assert media(clear)["aggregation-ocs"] == ("dsp-400g-dr4", 16)
    assert media(clear)["aggregation-ocs"] != media(lossy)["aggregation-ocs"]


def test_a_big_switch_is_priced_by_its_chips_chassis_and_internal_links(quotes: Path) -> None:
    """The default bigswitch figures: a chip at 0.6 of the switch price, 150 USD of
    chassis per external port, 20 USD per internal link. k = 4, 16 GPUs in servers of
    2: two big switches of 8 ports, 6 chips and 8 internal links each: 2 x (6 x 600 +
    8 x 150 + 8 x 20) = 9,920 USD, plus 16 NIC links across the row on AOC: 8,000."""
    costing = priced("bigswitch", quotes, gpus=16, gpus_per_server=2, radix=4)
    assert costing.switching_usd == pytest.approx(2 * (6 * 600 + 8 * 150 + 8 * 20))
    assert costing.links_usd == pytest.approx(16 * 500)


@pytest.fixture
def msoctl(capsys: pytest.CaptureFixture[str]) -> Msoctl:
    return in_process(capsys)


def _json(msoctl: Msoctl, *args: str) -> dict[str, object]:
    result = msoctl("design", "cost", "-o", "json", *args)
    assert result.code == 0, result
    document = json.loads(result.out)
    assert isinstance(document, dict)
    return document


def test_deepseek_v3_comparison_within_ten_percent(msoctl: Msoctl) -> None:
    """DeepSeek-V3's table (arXiv 2505.09343, section 5.1): MPFT, 16,384 endpoints of a
    2-tier multi-plane fat-tree, 768 switches, 16,384 links, 4.39 k USD per endpoint;
    FT3, 65,536 endpoints of a 3-tier fat-tree, 5,120 switches, 131,072 links, 7.5 k
    USD per endpoint; 64-port 400G switches, 8 GPUs per server. The counts match
    exactly; the costs per endpoint, and their ratio, come within 10%."""
    document = _json(msoctl, "--profile", "deepseek-v3", "--gpus", "16384,65536",
                     "--gpus-per-server", "8", "--nics-per-gpu", "1", "--radix", "64",
                     "--nic-speed", "400G", "--switch-speed", "400G",
                     "--arch", "multi-plane,fat-tree-3", "--baseline", "fat-tree-3")
    results = {(r["architecture"], r["gpus"]): r for r in document["results"]}  # type: ignore[attr-defined]
    mpft, ft3 = results["multi-plane", 16384], results["fat-tree-3", 65536]
    assert (mpft["switches"], mpft["switch_links"], mpft["tiers"]) == (768, 16384, 2)
    assert (ft3["switches"], ft3["switch_links"], ft3["tiers"]) == (5120, 131072, 3)
    assert mpft["cost_usd_per_endpoint_port"] == pytest.approx(4390, rel=0.10)
    assert ft3["cost_usd_per_endpoint_port"] == pytest.approx(7500, rel=0.10)
    ratio = ft3["cost_usd_per_endpoint_port"] / mpft["cost_usd_per_endpoint_port"]
    assert ratio == pytest.approx(7500 / 4390, rel=0.10)
    assert document["inputs"]["endpoint_links_costed"] is False  # type: ignore[index]
    assert not results["multi-plane", 65536]["buildable"]  # 8 planes hold 16,384 at most


def test_rail_only_lands_in_the_published_savings_range(msoctl: Msoctl) -> None:
    """Rail-only (Wang et al., arXiv 2307.12169, abstract and section 6): against the
    any-to-any rail-optimized Clos, network cost 38-77% lower and power 37-75% lower,
    with scale-up domains of 256 GPUs. 32,768 GPUs in 256-GPU domains, 400G NICs,
    51.2T switches split to 128 x 400G: each of the 256 rails has 128 ports, one
    switch; the rail-optimized fat-tree needs three tiers. With the default table the
    savings are at least the paper's smallest (the figures themselves depend on the
    prices: 77% in cost and 79% in power here, at the top of its range)."""
    document = _json(msoctl, "--gpus", "32768", "--gpus-per-server", "256",
                     "--radix", "64", "--switch-speed", "800G",
                     "--arch", "rail-optimized,rail-only")
    rail = next(r for r in document["results"]  # type: ignore[attr-defined]
                if r["architecture"] == "rail-only")
    assert (rail["switches"], rail["tiers"]) == (256, 1)
    assert (rail["switch_links"], rail["transceivers"]) == (0, 0)
    assert rail["cost_vs_baseline"] <= 1 - 0.38
    assert rail["power_vs_baseline"] <= 1 - 0.37


def test_quotes_replace_the_default_figures(msoctl: Msoctl, tmp_path: Path) -> None:
    """Doubling the switch's price in a file of quotes doubles the switching cost and
    leaves the links' cost as it was; the baseline's own ratio stays 1."""
    quotes = tmp_path / "quotes.yaml"
    quotes.write_text("switches:\n  sw-64x400g: {usd: 50000}\n")
    args = ("--gpus", "16384", "--switch-speed", "400G", "--arch", "fat-tree-3,multi-plane")
    plain = _json(msoctl, *args)
    quoted = _json(msoctl, *args, "--components", str(quotes))
    for before, after in zip(plain["results"], quoted["results"], strict=True):  # type: ignore[call-overload]
        assert after["cost_breakdown_usd"]["switching"] == \
            pytest.approx(2 * before["cost_breakdown_usd"]["switching"])
        assert after["cost_breakdown_usd"]["links"] == \
            pytest.approx(before["cost_breakdown_usd"]["links"])
    assert quoted["results"][0]["cost_vs_baseline"] == 1.0  # type: ignore[index]
    assert quoted["inputs"]["components"] == f"default + {quotes}"  # type: ignore[index]
