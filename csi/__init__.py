"""The CSI driver ``curvine.csi.fluid.io``: identity, controller and node services, one shared FUSE
process per mount key per node, reference counts that survive restarts.

Layers, lowest first (tests/unit/test_import_contract.py holds them): ``model`` (parameters, names,
paths: pure), ``fuse`` (FUSE processes and the kernel's mounts) and ``node`` (the node's state and
its FuseMount mirror), ``backends`` (the controller's volume directories), ``rpc`` (the gRPC edge),
then ``main`` wiring them up; ``keyedlocks`` (a lock per name) is a leaf they share. ``proto``
holds the generated stubs; ``standin`` is development-only.
"""
