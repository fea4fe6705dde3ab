"""kailab: a lab that teaches GPU queue scheduling with KAI Scheduler on fake GPUs."""

__version__ = "0.1.0"
