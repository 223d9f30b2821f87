"""Benchmarks for janus_like: per-op eager overhead (`overhead`) and training steps of small
models (`models/`, driven by `runner`) compared across eager janus_like, the JIT, hand-written
NumPy and, when installed, PyTorch and JAX. Never run as timed unit tests; see README.md.
"""
