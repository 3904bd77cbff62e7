"""kubectl-fluid: the product's core library (API models, runtime config, Kubernetes glue) and the
kubectl plugin. Server processes live in the sibling top-level packages ``controller``, ``webhook``
and ``csi``; they may import this package, never each other."""

# The one place the version is written: the wheel's metadata (pyproject.toml reads it), the plugin's
# ``kubectl fluid version`` and User-Agent, and the Helm chart and krew manifest (tests keep them equal).
__version__ = "0.1.0"
