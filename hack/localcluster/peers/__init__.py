"""The product's peers as local processes of the test bed: a single-node real Curvine
(curvinecluster: master, worker, a probe FUSE; curvinebins: its binaries, unpacked from the test peer
folder into the cache). Mooncake needs no module here: it runs as pods of images/mooncake on a real
node, or from the ``mooncake`` extra in the e2e tests.

curvinebins is standard library only (``make bins`` runs it before the venv exists); curvinecluster
needs the venv (tomli-w, the product's csi package). Neither uses any other part of localcluster.
"""
