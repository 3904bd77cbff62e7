"""kubectl-fluid: the product's core library (API models, runtime config, Kubernetes glue) and the
kubectl plugin. Server processes live in the sibling top-level packages ``controller``, ``webhook``
and ``csi``; they may import this package, never each other."""
