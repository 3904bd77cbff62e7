"""A class's master ``executionEntries`` (mountUFS, reportSummary), run as upstream Fluid runs them.

``plan.py`` decides (pure) what must run now; ``summary.py`` reads reportSummary's output (pure);
``runner.py`` is the edge: a queue and workers of its own, the exec through ``pods/exec``, the status
writes and Events. A long script holds only its own key, never the reconciler's workers.
"""
