"""Where the controller service makes and removes volume directories: the protocol, a local tree
(tests, the stand-in), and the real Curvine through a FUSE mount it owns. May import csi.model,
csi.fuse and csi.keyedlocks; never the gRPC edge."""
