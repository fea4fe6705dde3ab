"""One lab for a whole class: each learner a KAI partition of their own on one cluster.

The class is klass.py; a partition itself, kailab/partitions.py."""

STUCK_SECONDS = 120  # a lesson running, or a pod Pending, this long in a learner's slice is worth the instructor's look
