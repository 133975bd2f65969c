"""Benchmarks that hold the input pipeline against its alternatives and its limit.

Run them all with `python -m benchmarks [--size tiny|full] [--out benchmarks/results]`.
"""
