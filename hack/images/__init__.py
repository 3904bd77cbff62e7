"""Container images without Docker or a registry, as OCI archives for ``ctr images import``:

    oci       the archive format (layers, config, manifest, index) and the pause, busybox and
              single-binary images; standard library only
    debian    what the Debian-based images share: an mmdebstrap root file system with a venv
    product   the product's image (the Dockerfile's, without Docker)
    mooncake  the Mooncake store's image (images/mooncake/Dockerfile's, without Docker)
    curvine   Curvine's client and server binaries, for the CSI node's FUSE pods

Each is also a command line: ``PYTHONPATH=hack python -m images.product [--out DIR]``. They need no
cluster and import nothing of localcluster; real nodes (localcluster.realnodes) import them.
"""
