"""Benchmarks that print tables: recognition accuracy (`python -m assistant.bench accuracy`)."""
