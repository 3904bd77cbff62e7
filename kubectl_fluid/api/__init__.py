"""Pydantic models of the CRDs (Dataset, CacheRuntime, CacheRuntimeClass, FuseMount) and the single
home of every label, annotation, ConfigMap, volume, env and path name the product uses."""
