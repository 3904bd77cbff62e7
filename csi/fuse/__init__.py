"""Running FUSE: the supervised child of embedded mode, the per-key pods of standalone mode, each
mount key's configuration file, the kernel's mount table and bind mounts, recognising processes.
May import csi.model only; never the gRPC edge or node bookkeeping."""
