#!/usr/bin/env bash
# Builds the local control plane from Go modules through the module proxy (no Docker, no downloads of
# prebuilt binaries) into a version-keyed cache outside the repository, reusing what is already there.
# Prints the cache's bin directory on stdout; progress goes to stderr.
set -euo pipefail
# What each mode builds: a target builds only what it runs (a cold `make demo` has no use for the
# test tools, and would spend minutes on them).
#   (none)        everything `make test` runs: the control plane with kwok, csi-sanity, helm and krew
#   cluster-kwok  the control plane with kwok (make up: kwok nodes beside the real ones)
#   cluster       the control plane alone (make demo: a user's shape of cluster, real nodes only)
#   tools         helm and krew alone (a suite run against a cluster KUBECONFIG names)
#   node          a real node's binaries (below)
mode=${1:-all}
case "$mode" in
  all|cluster|cluster-kwok|tools|node) ;;
  *) echo "error: build-bins.sh: unknown mode '$mode' (all, cluster, cluster-kwok, tools, node)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
CACHE="${KUBECTL_FLUID_CACHE:-$HOME/.cache/kubectl-fluid}"
SCRATCH="$CACHE/scratch"
# One build at a time per cache: two makes started together (make demo beside make test, or two
# worktrees) would otherwise build into the same temporary folders. The second waits, then finds the
# first one's results.
mkdir -p "$CACHE"
exec 9>"$CACHE/.build.lock"
flock 9
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "error: go (>= 1.26) is needed to build the local control plane; or point KUBECONFIG at an existing cluster" >&2; exit 1; }

say() { printf '[build-bins] %s\n' "$*" >&2; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
# Each component lands in its own versioned folder, written to a temporary name and renamed at the
# end, so an interrupted build never leaves a half-built cache entry that later runs would trust.
dest() { echo "$CACHE/$1-$2"; }
have() { [ -x "$(dest "$1" "$2")/$3" ]; }
finish() { rm -rf "$2"; mv "$1" "$2"; }
timed() { local t0=$SECONDS; "$@"; say "  done in $((SECONDS - t0))s"; }

# A module that builds k8s.io/kubernetes commands: k8s.io/kubernetes requires its staging modules at the
# unpublished v0.0.0; each is published as v0.X.Y for Kubernetes v1.X.Y. Derive the list from its go.mod
# so new staging modules are not missed. Shared by the control plane and kubelet (one module cache).
kube_module() {  # commands...
  local d="$SCRATCH/kubernetes-$KUBE_VERSION"; mkdir -p "$d"; cd "$d"
  [ -f go.mod ] || go mod init local.build/kubernetes >/dev/null 2>&1
  local kmod; kmod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | field GoMod)
  local staging="v0.${KUBE_VERSION#v1.}" m c
  for m in $( { sed -nE 's#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+) v0\.0\.0([[:space:]].*)?$#\1#p' "$kmod"
                sed -nE 's#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+) => \./staging/.*#\1#p' "$kmod"; } | sort -u ); do
    go mod edit -replace "$m=$m@$staging"
  done
  go mod edit -go="$(sed -nE 's/^go ([0-9.]+).*/\1/p' "$kmod")"
  local gd; gd=$(sed -nE 's/^godebug (default=[^ ]+).*/\1/p' "$kmod"); [ -z "$gd" ] || go mod edit -godebug="$gd"
  say "  resolving modules"
  # shellcheck disable=SC2046
  go get -tool $(for c in "$@"; do echo "k8s.io/kubernetes/cmd/$c@$KUBE_VERSION"; done) >/dev/null 2>&1 \
    || go get -tool $(for c in "$@"; do echo "k8s.io/kubernetes/cmd/$c@$KUBE_VERSION"; done)
}

build_kube_cmds() {  # cache-name commands...
  local name=$1; shift
  local out; out=$(dest "$name" "$KUBE_VERSION")
  kube_module "$@"
  local minor; minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  local ld="-s -w" p c
  # kubectl version and tools that parse --version need real version stamps.
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.gitCommit=go-module-build -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  for c in "$@"; do
    say "  compiling $c"
    timed go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ld" -o "$out.tmp/$c" "k8s.io/kubernetes/cmd/$c"
  done
  finish "$out.tmp" "$out"
}

build_kube() {
  have kubernetes "$KUBE_VERSION" kubectl && { say "kubernetes $KUBE_VERSION: cached"; return; }
  say "kubernetes $KUBE_VERSION: building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (cold: 10-30 min on 2 cores)"
  build_kube_cmds kubernetes kube-apiserver kube-controller-manager kube-scheduler kubectl
}

# ---- a real node: kubelet, containerd (+ ctr, its runc shim), runc, the pause binary

build_kubelet() {
  have kubelet "$KUBE_VERSION" kubelet && { say "kubelet $KUBE_VERSION: cached"; return; }
  say "kubelet $KUBE_VERSION: building (about 1 min after the control plane, 8 min with an empty Go build cache)"
  build_kube_cmds kubelet kubelet
}

build_containerd() {
  have containerd "$CONTAINERD_VERSION" containerd-shim-runc-v2 && { say "containerd $CONTAINERD_VERSION: cached"; return; }
  say "containerd $CONTAINERD_VERSION: building containerd, ctr, containerd-shim-runc-v2 (about 2 min)"
  local out m=github.com/containerd/containerd/v2 c; out=$(dest containerd "$CONTAINERD_VERSION")
  local ld="-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Revision=go-module-build"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  for c in containerd ctr containerd-shim-runc-v2; do
    say "  compiling $c"
    GOBIN="$out.tmp" timed go install -trimpath -tags no_btrfs,no_devmapper,no_zfs -ldflags "$ld" "$m/cmd/$c@$CONTAINERD_VERSION"
  done
  finish "$out.tmp" "$out"
}

build_runc() {
  have runc "$RUNC_VERSION" runc && { say "runc $RUNC_VERSION: cached"; return; }
  say "runc $RUNC_VERSION: building (cgo, libseccomp)"
  pkg-config --exists libseccomp || { echo "error: runc needs libseccomp's headers: apt-get install -y libseccomp-dev pkg-config (hack/prereqs.sh)" >&2; exit 1; }
  local out; out=$(dest runc "$RUNC_VERSION")
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  CGO_ENABLED=1 GOBIN="$out.tmp" timed go install -trimpath -tags seccomp \
    -ldflags "-s -w -X main.version=${RUNC_VERSION#v} -X main.gitCommit=go-module-build" \
    "github.com/opencontainers/runc@$RUNC_VERSION"
  finish "$out.tmp" "$out"
}

build_pause() {
  # The sandbox's pause process, from the Kubernetes source the module proxy serves: static, so the
  # image is this one file.
  have pause "$KUBE_VERSION" pause && { say "pause $KUBE_VERSION: cached"; return; }
  say "pause $KUBE_VERSION: compiling build/pause/linux/pause.c"
  local out src; out=$(dest pause "$KUBE_VERSION")
  src=$(cd "$SCRATCH" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | field Dir)
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  gcc -Os -static -Wall -Werror -DVERSION="$KUBE_VERSION-local" -o "$out.tmp/pause" "$src/build/pause/linux/pause.c"
  strip "$out.tmp/pause"
  finish "$out.tmp" "$out"
}

build_busybox() {
  # Debian's static busybox for test images, unpacked from its .deb (installing it would replace the
  # host's dynamic busybox, which it conflicts with).
  [ -x "$CACHE/busybox-static/bin/busybox" ] && { say "busybox-static: cached"; return; }
  say "busybox-static: fetching Debian's .deb"
  local out="$CACHE/busybox-static" d; d=$(mktemp -d); chmod 755 "$d"  # apt-get download runs as _apt
  (cd "$d" && apt-get download -qq busybox-static >/dev/null) \
    || { rm -rf "$d"; echo "error: apt-get download busybox-static failed (run apt-get update?)" >&2; exit 1; }
  rm -rf "$out.tmp"; dpkg-deb -x "$d"/busybox-static_*.deb "$out.tmp"; rm -rf "$d"
  finish "$out.tmp" "$out"
}

build_coredns() {
  # A real node's cluster DNS (hack/localcluster/realnodes.py serves each node's pods from its bridge address).
  have coredns "$COREDNS_VERSION" coredns && { say "coredns $COREDNS_VERSION: cached"; return; }
  say "coredns $COREDNS_VERSION: building (about 5 min the first time: many modules)"
  local out; out=$(dest coredns "$COREDNS_VERSION")
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed go install -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=go-module-build" \
    "github.com/coredns/coredns@$COREDNS_VERSION"
  finish "$out.tmp" "$out"
}

build_etcd() {
  local out; out=$(dest etcd "$ETCD_VERSION")
  have etcd "$ETCD_VERSION" etcd && { say "etcd $ETCD_VERSION: cached"; return; }
  say "etcd $ETCD_VERSION: building"
  local d="$SCRATCH/etcd-$ETCD_VERSION"; rm -rf "$d"; mkdir -p "$d"; cd "$d"
  go mod init local.build/etcd >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 || go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  timed go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=go-module-build" \
    -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
  finish "$out.tmp" "$out"
}

build_installable() {  # name version binary package
  local out; out=$(dest "$1" "$2")
  have "$1" "$2" "$3" && { say "$1 $2: cached"; return; }
  say "$1 $2: building"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed go install -trimpath -ldflags "-s -w" "$4@$2"
  finish "$out.tmp" "$out"
}

build_provisioner() {
  local out; out=$(dest csi-provisioner "$CSI_PROVISIONER_VERSION")
  have csi-provisioner "$CSI_PROVISIONER_VERSION" csi-provisioner && { say "csi-provisioner $CSI_PROVISIONER_VERSION: cached"; return; }
  say "csi-provisioner $CSI_PROVISIONER_VERSION: building"
  # Its go.mod has replace directives, which `go install pkg@version` refuses: build inside a copy of
  # the module (the module cache is read-only), with its own go.mod and go.sum. /vN from the pin.
  local d="$SCRATCH/csi-provisioner-$CSI_PROVISIONER_VERSION" src
  src=$(cd "$SCRATCH" && go mod download -json "github.com/kubernetes-csi/external-provisioner/${CSI_PROVISIONER_VERSION%%.*}@$CSI_PROVISIONER_VERSION" | field Dir)
  rm -rf "$d"; cp -r "$src" "$d"; chmod -R u+w "$d"; cd "$d"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  timed go build -trimpath -ldflags "-s -w -X main.version=$CSI_PROVISIONER_VERSION" \
    -o "$out.tmp/csi-provisioner" ./cmd/csi-provisioner
  finish "$out.tmp" "$out"
}

build_helm() {
  local out; out=$(dest helm "$HELM_VERSION")
  have helm "$HELM_VERSION" helm && { say "helm $HELM_VERSION: cached"; return; }
  say "helm $HELM_VERSION: building"
  # As helm's Makefile stamps it: its own version, and the Kubernetes version `helm template` and
  # `helm lint` assume (.Capabilities.KubeVersion) from the client-go it is built with; unstamped,
  # that would be v1.20 and charts needing a newer Kubernetes would not render.
  local d="$SCRATCH/dl"; mkdir -p "$d"; cd "$d"; [ -f go.mod ] || go mod init local.build/dl >/dev/null 2>&1
  local minor; minor=$(sed -nE 's#^[[:space:]]*k8s\.io/client-go v0\.([0-9]+)\..*#\1#p' \
    "$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | field GoMod)")
  local v=helm.sh/helm/v3/internal/version p ld="-s -w"
  ld="$ld -X $v.version=$HELM_VERSION -X $v.gitCommit=go-module-build -X $v.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ld="$ld -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed go install -trimpath -ldflags "$ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  finish "$out.tmp" "$out"
}

build_krew() {
  # krew itself (kubectl-krew, the name kubectl finds plugins by) and krew-index's manifest validator.
  local out; out=$(dest krew "$KREW_VERSION")
  have krew "$KREW_VERSION" validate-krew-manifest && have krew "$KREW_VERSION" kubectl-krew \
    && { say "krew $KREW_VERSION: cached"; return; }
  say "krew $KREW_VERSION: building"
  local v=sigs.k8s.io/krew/internal/version
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  GOBIN="$out.tmp" timed go install -trimpath -tags netgo \
    -ldflags "-s -w -X $v.gitTag=$KREW_VERSION -X $v.gitCommit=go-module-build" \
    "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION"
  mv "$out.tmp/krew" "$out.tmp/kubectl-krew"
  finish "$out.tmp" "$out"
}

kwok_stages() {
  # kwok needs Stage objects to move pods and nodes; the upstream "fast" stages ship in its module.
  local out; out=$(dest kwok "$KWOK_VERSION")
  [ -s "$out/stages.yaml" ] && return
  local d="$SCRATCH/dl"; mkdir -p "$d"; cd "$d"; [ -f go.mod ] || go mod init local.build/dl >/dev/null 2>&1
  local kdir f; kdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | field Dir)
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo '---'; cat "$kdir/kustomize/stage/$f"
  done > "$out/stages.yaml.tmp"
  mv "$out/stages.yaml.tmp" "$out/stages.yaml"
}

mkdir -p "$CACHE" "$SCRATCH"
t0=$SECONDS
# `build-bins.sh node`: a real node's binaries alone (kubelet, containerd, runc, pause, busybox, coredns), linked
# into one folder keyed by their pins, printed on stdout. CNI plugins come from Debian.
if [ "$mode" = node ]; then
  build_kubelet
  build_containerd
  build_runc
  build_pause
  build_busybox
  build_coredns
  bin="$CACHE/bin/node-k8s-$KUBE_VERSION.containerd-$CONTAINERD_VERSION.runc-$RUNC_VERSION.coredns-$COREDNS_VERSION"
  mkdir -p "$bin"
  for f in kubelet-"$KUBE_VERSION"/kubelet containerd-"$CONTAINERD_VERSION"/{containerd,ctr,containerd-shim-runc-v2} \
           runc-"$RUNC_VERSION"/runc pause-"$KUBE_VERSION"/pause busybox-static/bin/busybox \
           coredns-"$COREDNS_VERSION"/coredns; do
    ln -sfn "$CACHE/$f" "$bin/$(basename "$f")"
  done
  say "node binaries ready in $((SECONDS - t0))s: $bin"
  echo "$bin"
  exit 0
fi
if [ "$mode" = all ] || [ "$mode" = tools ]; then
  build_helm
  build_krew
fi
if [ "$mode" = tools ]; then say "tools ready in $((SECONDS - t0))s"; exit 0; fi
links=(kubernetes-"$KUBE_VERSION"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
       etcd-"$ETCD_VERSION"/etcd csi-provisioner-"$CSI_PROVISIONER_VERSION"/csi-provisioner)
key="k8s-$KUBE_VERSION.etcd-$ETCD_VERSION"
if [ "$mode" != cluster ]; then
  build_installable kwok "$KWOK_VERSION" kwok sigs.k8s.io/kwok/cmd/kwok
  kwok_stages
  links+=(kwok-"$KWOK_VERSION"/{kwok,stages.yaml})
  key="$key.kwok-$KWOK_VERSION"
fi
if [ "$mode" = all ]; then
  build_installable csi-test "$CSI_TEST_VERSION" csi-sanity github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity
  links+=(csi-test-"$CSI_TEST_VERSION"/csi-sanity)
  key="$key.csi-test-$CSI_TEST_VERSION"
fi
build_provisioner
build_etcd
build_kube
# One folder of links for callers, keyed by the set of pins it holds.
bin="$CACHE/bin/$key.csi-provisioner-$CSI_PROVISIONER_VERSION"
mkdir -p "$bin"
for f in "${links[@]}"; do
  ln -sfn "$CACHE/$f" "$bin/$(basename "$f")"
done
say "control plane ready in $((SECONDS - t0))s: $bin"
echo "$bin"
