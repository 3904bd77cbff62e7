"""Pure builders of a dataset's runtime config: ``runtime.json`` and its shell form ``runtime.sh``."""
