"""The benchmarks behind make bench (python3 -m bench.results) and
bench/RESULTS.md."""
