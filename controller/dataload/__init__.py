"""The controller's room for DataLoads (SPEC §7): its own watches of DataLoads and loader Jobs, a
queue keyed by Dataset, the pure Job builder (``job.py``) and phase planner (``plan.py``), and the
thin I/O that carries a plan out (``room.py``)."""
