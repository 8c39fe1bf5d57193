"""Benchmarks: `make bench` (bench/run.py). Not tests; see bench/README.md."""
