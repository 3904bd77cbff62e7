"""The gRPC edge: the unix-socket server, the Identity, Controller and Node services, kubelet's
plugin registration, and the mapping of the core's errors to status codes. The only package (with
csi.main) that imports grpc, protobuf or csi.proto; it may import every other layer but standin."""
