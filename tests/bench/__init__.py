"""The benchmarks' smoke tests: a small run of each, its document's shape; no timing asserted."""
