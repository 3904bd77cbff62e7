"""The controller process: reconciles Dataset/CacheRuntime into runtime-config ConfigMaps, cache
components and PV/PVC, from a de-duplicating work queue under Lease leader election."""
