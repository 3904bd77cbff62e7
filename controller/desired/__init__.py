"""Desired state of a CacheRuntime's children (SPEC §2): pure builders from pydantic models to
Kubernetes objects as plain dicts in their JSON form, byte-stable for equal inputs.

One module per kind of object; each documents the decisions it makes where SPEC is silent.
"""

from controller.desired.children import Children, desired_children

__all__ = ["Children", "desired_children"]
