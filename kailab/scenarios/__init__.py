"""Scenarios: the vocabulary of a scenario file, its loader, and the engine that plays it."""
