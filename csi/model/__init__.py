"""The driver's pure volume model: StorageClass parameters, master addresses, tuning flags, paths,
mount keys, volume handles, the FUSE argv, and the errors the core raises. No I/O, no gRPC; imports
nothing of csi outside this package."""
