"""Makes tests/ a Python package so that the benchmarks run as modules from the repository root
(`python3 -m tests.bench.quality`); cargo reads only the .rs files here."""
