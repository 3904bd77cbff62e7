"""Development only, not the driver: a stand-in for ``curvine-fuse`` (``curvine-fuse-standin``), a
small real FUSE filesystem serving a local directory. It ships in the image for local clusters and
tests. Imports nothing of csi outside this package, and nothing of the driver imports it."""
