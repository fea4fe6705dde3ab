"""One lab for a whole class: each learner a KAI partition of their own on one cluster (see plan.py)."""
