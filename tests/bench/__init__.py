"""The benchmarks behind `make bench`, `bench-quality`, `bench-scale` and `bench-hostile`, run as
modules from the repository root (`python3 -m tests.bench.quality`)."""
