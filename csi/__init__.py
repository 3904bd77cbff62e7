"""The CSI driver ``curvine.csi.fluid.io``: identity, controller and node services, one shared FUSE
process per mount key per node, reference counts that survive restarts."""
