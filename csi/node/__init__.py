"""The node's bookkeeping: which mounts, staged volumes and targets exist (pure transitions), the
state file they are saved to, and the FuseMount objects that mirror them to the cluster. May import
csi.model only; never the gRPC edge or FUSE process management."""
