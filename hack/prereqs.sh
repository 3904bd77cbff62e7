#!/usr/bin/env bash
# Every prerequisite of `make up`, `make demo`, `make test` and `make bench`, checked in about a
# second, before anything is built: Debian packages (installed when run as root with apt, otherwise
# named in one line with the command that installs them), Python with venv, Go for the control
# plane (unless KUBECONFIG names a cluster), root and /dev/fuse for the FUSE mounts.
# The list of Debian packages lives here and nowhere else; .ci/run runs this script too.
set -euo pipefail

# dash, bash, busybox: the property tests source runtime.sh in each. fuse3 (fusermount3), libfuse3-3:
# the curvine-fuse stand-in. util-linux: unshare (the API server's /etc/hosts, real nodes' views).
# libibverbs1: Mooncake's binaries link it even without RDMA hardware. ca-certificates: pip and the
# Go module proxy over HTTPS.
# A real node (hack/localcluster/realnodes.py): gcc, libc6-dev (the static pause binary), libseccomp-dev and
# pkg-config (runc's cgo), containernetworking-plugins (bridge, host-local, loopback), iproute2,
# iptables (the kubernetes Service's rule); mmdebstrap: the product's image without Docker
# (hack/images/product.py).
PACKAGES=(make ca-certificates dash bash busybox fuse3 libfuse3-3 util-linux libibverbs1
          gcc libc6-dev libseccomp-dev pkg-config containernetworking-plugins iproute2 iptables mmdebstrap)
MIN_PYTHON=3.11
MIN_GO=1.26

# Every problem is told, one line each, before exiting: a user fixes them all in one go.
problems=0
fail() { echo "error: $*" >&2; problems=$((problems + 1)); }
say() { echo "[prereqs] $*" >&2; }

missing_packages() {
  command -v dpkg-query >/dev/null || return 0
  # One dpkg-query for all of them: a package it does not know is absent from its output.
  local installed
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)
  local p
  for p in "${PACKAGES[@]}"; do
    grep -qE "^$p ii" <<<"$installed" || echo "$p"
  done
}

mapfile -t need < <(missing_packages)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    fail "missing Debian packages: ${need[*]}; install them with: sudo apt-get install -y ${need[*]}"
  fi
fi
if ! command -v dpkg-query >/dev/null; then
  # Not Debian: name what the packages provide, so the user can find them in their own distribution.
  for c in make dash bash busybox fusermount3 unshare; do
    command -v "$c" >/dev/null || fail "$c not found: install it (Debian: ${PACKAGES[*]})"
  done
  ldconfig -p 2>/dev/null | grep -q 'libibverbs\.so\.1' || fail "libibverbs.so.1 not found: install libibverbs (Debian: libibverbs1)"
fi

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
  fail "$python not found: Python >= $MIN_PYTHON is needed"
else
  "$python" - "$MIN_PYTHON" <<'EOF' || problems=$((problems + 1))
import sys
want = tuple(int(x) for x in sys.argv[1].split("."))
if sys.version_info[:2] < want:
    sys.exit(f"error: Python >= {sys.argv[1]} is needed, {sys.executable} is {sys.version.split()[0]}; set PYTHON=")
try:
    import ensurepip, venv  # noqa: F401
except ImportError:
    sys.exit(f"error: {sys.executable} cannot make a venv; install it (Debian: sudo apt-get install -y python3-venv)")
EOF
fi

if [ -z "${KUBECONFIG:-}" ]; then
  if ! command -v go >/dev/null; then
    fail "go >= $MIN_GO not found: it builds the local control plane (or point KUBECONFIG at an existing cluster)"
  else
    have=$(go env GOVERSION 2>/dev/null | sed -nE 's/^go([0-9]+\.[0-9]+).*/\1/p' || true)
    if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$MIN_GO" "$have" | sort -V | head -1)" != "$MIN_GO" ]; then
      fail "go >= $MIN_GO is needed to build the local control plane, found ${have:-none}; install a newer Go or point KUBECONFIG at a cluster"
    fi
  fi
fi

[ "$(id -u)" = 0 ] || fail "root is needed: the CSI node service and its tests make FUSE and bind mounts; run as root (e.g. sudo -E make ...)"
[ -c /dev/fuse ] || fail "/dev/fuse is missing: load the fuse module (modprobe fuse) or give the container --device /dev/fuse"

[ "$problems" = 0 ] || exit 1
