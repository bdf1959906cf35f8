"""Benchmarks that print tables: recognition accuracy (`python -m lab.bench accuracy`)."""
