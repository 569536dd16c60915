#!/usr/bin/env python3
"""The mi300x-8 preset's intra-node latency_us and bus_efficiency are the flow-model fit
(scripts/collective_sweep.py fit_flow_model, points >= 1 MiB) of AMD's published rccl-tests
all-reduce sweep on 8 MI300X (tests/calibration/mi300x_rccl_all_reduce.json; docs/fidelity/amd.md,
"MI300X and MI355X: published measurements"). Run: python3 tests/test_mi300x_fit.py
(tests/test_mi300x_collectives.cpp runs it under ctest)."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import collective_sweep  # noqa: E402

POINTS = os.path.join(HERE, "calibration", "mi300x_rccl_all_reduce.json")
PRESET = os.path.join(HERE, "..", "core", "presets", "clusters", "mi300x-8.json")
LINK_GBPS = 448  # 7 xGMI links x 64 GB/s per direction, modelled as a switch


class Mi300xFit(unittest.TestCase):
    def setUp(self):
        with open(POINTS) as f:
            self.points = json.load(f)
        with open(PRESET) as f:
            self.node = json.load(f)["intra_node"]

    def test_preset_is_the_fit(self):
        alpha, eff, rms = collective_sweep.fit_flow_model([self.points], LINK_GBPS)
        self.assertEqual(self.node["link_GBps"], LINK_GBPS)
        self.assertEqual(round(alpha, 2), self.node["latency_us"])
        self.assertEqual(round(eff[("all_reduce", 8)], 3), self.node["bus_efficiency"])
        self.assertLess(rms, 0.09)

    def test_slope_fit_is_the_large_size_asymptote(self):
        # measure_ops.py --fit-collectives on this one file: the slope of sizes >= 64 MiB, which
        # the bus bandwidth at 16 GiB (319 GB/s = 0.712 of 448) matches; the preset's joint fit
        # over every size from 1 MiB sits below it.
        eff, _, busbw = collective_sweep.fit(self.points, "intra_node", LINK_GBPS)
        self.assertAlmostEqual(eff, 0.712, places=3)
        self.assertAlmostEqual(busbw, 319.0, places=0)
        self.assertLess(self.node["bus_efficiency"], eff)


if __name__ == "__main__":
    unittest.main()
