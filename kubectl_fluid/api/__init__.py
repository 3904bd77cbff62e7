"""Pydantic models of the CRDs (Dataset, CacheRuntime, CacheRuntimeClass, FuseMount) and the single
home of every label, annotation, ConfigMap, volume, env and path name the product uses.

Import from the submodules (``names``, ``dataset``, ``cacheruntime``, ...): this package imports
nothing itself, so code that only needs ``names`` (the plugin's start-up) does not load pydantic."""
