#!/usr/bin/env bash
# Installs or builds the real servers the integration tests start, caching them outside the repository.
# Prints nothing but errors when everything is already cached.
# Usage: hack/test-servers.sh [etcd|kube-apiserver|opa|minio|postgres|gatekeeper|helm|prometheus|victorialogs|chromium]...
#
# Every step runs in a subshell of its own (the functions' bodies are in parentheses): a step may change its
# directory, redirect its output or set a trap, and nothing of that leaks into the next step. The helpers are
# found from HACK_DIR, computed once, and the cache is made absolute, so the script works from any directory.
# hack/test-servers_test.go runs this control flow end to end with stand-ins for go, apt-get and dpkg-deb.
set -euo pipefail

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/otelcol-policy}
mkdir -p "$CACHE_DIR"
CACHE_DIR=$(cd "$CACHE_DIR" && pwd -P)
BIN_DIR=$CACHE_DIR/bin
KUBERNETES_VERSION=${KUBERNETES_VERSION:-v1.36.3}
mkdir -p "$BIN_DIR"

log() { echo "test-servers: $*" >&2; }

# build_failed NAME DIR reports a failed build with the end of DIR/build.log and exits.
build_failed() {
  log "$1 build failed, see $2/build.log"
  tail -20 "$2/build.log" >&2
  exit 1
}

as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi
}

# etcd built from go.etcd.io/etcd/server/v3, whose go.mod has replace directives that `go install` refuses, so
# from a throw-away module that requires it. Not Debian's etcd-server: its 3.4.23 lacks the watch progress
# requests kube-apiserver 1.36 needs to serve consistent lists from its watch cache (it then lists every page
# from etcd, two to three times slower, and unsupported by 1.36).
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
build_etcd() (
  local bin=$BIN_DIR/etcd-$ETCD_VERSION
  [[ -x $bin ]] && return
  log "building etcd $ETCD_VERSION (about a minute, once)"
  local dir=$CACHE_DIR/etcd-build-$ETCD_VERSION
  rm -rf "$dir" && mkdir -p "$dir"
  printf 'module etcd-build\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > "$dir/tools.go"
  (cd "$dir" && go mod tidy && go build -o "$bin.tmp" go.etcd.io/etcd/server/v3) >"$dir/build.log" 2>&1 ||
    build_failed "etcd" "$dir"
  mv "$bin.tmp" "$bin"
)

# kube-apiserver built from k8s.io/kubernetes. That module requires its staging modules at v0.0.0 and replaces
# them with ./staging paths, which do not apply to a dependent module: the build module replaces each one with
# its published release (v0.X.Y for Kubernetes v1.X.Y), derived from kubernetes' own go.mod.
build_kube_apiserver() (
  local bin=$BIN_DIR/kube-apiserver-$KUBERNETES_VERSION
  [[ -x $bin ]] && return
  log "building kube-apiserver $KUBERNETES_VERSION (about 4 minutes on 2 cores, once)"
  local dir=$CACHE_DIR/kube-apiserver-build-$KUBERNETES_VERSION
  local staging=v0.${KUBERNETES_VERSION#v1.}
  rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
  # The step's stderr goes to the build log; the ERR trap reports to the script's stderr, kept as fd 3.
  exec 3>&2 2>"$dir/build.log"
  trap 'echo "test-servers: kube-apiserver build failed, see $dir/build.log" >&3; tail -20 "$dir/build.log" >&3' ERR
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [[ -n $gomod ]] || { log "cannot download k8s.io/kubernetes@$KUBERNETES_VERSION"; exit 1; }
  {
    printf 'module kube-apiserver-build\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBERNETES_VERSION"
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*$#\t\1 => \1 '"$staging"'#p' "$gomod"
    printf ')\n'
  } > go.mod
  go mod tidy -e >/dev/null 2>&1 || true
  go get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBERNETES_VERSION" >/dev/null
  printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\nfunc main() {}\n' > keep.go
  go mod tidy >/dev/null
  local minor=${KUBERNETES_VERSION#v1.}
  minor=${minor%%.*}
  go build -o "$bin.tmp" -ldflags "-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    k8s.io/kubernetes/cmd/kube-apiserver
  mv "$bin.tmp" "$bin"
)

# OPA, whose decision_logs plugin uploads to the decision_logs receiver in its tests.
OPA_VERSION=${OPA_VERSION:-v1.22.2}
install_opa() (
  local bin=$BIN_DIR/opa-$OPA_VERSION
  [[ -x $bin ]] && return
  log "building opa $OPA_VERSION (about a minute, once)"
  local dir=$CACHE_DIR/opa-build-$OPA_VERSION
  mkdir -p "$dir"
  GOBIN=$dir go install "github.com/open-policy-agent/opa@$OPA_VERSION" 2>"$dir/build.log" ||
    build_failed "opa" "$dir"
  mv "$dir/opa" "$bin"
)

# MinIO server and its mc client, which the s3 exporter's tests run as a real S3 endpoint.
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
MC_VERSION=${MC_VERSION:-v0.0.0-20250313080218-cf909e1063a9}
install_minio() (
  local name version
  for name in minio mc; do
    if [[ $name == minio ]]; then version=$MINIO_VERSION; else version=$MC_VERSION; fi
    local bin=$BIN_DIR/$name-$version
    [[ -x $bin ]] && continue
    log "building $name $version (about 3 minutes for both, once)"
    local dir=$CACHE_DIR/$name-build-$version
    mkdir -p "$dir"
    GOBIN=$dir go install "github.com/minio/$name@$version" 2>"$dir/build.log" ||
      build_failed "$name" "$dir"
    mv "$dir/$name" "$bin"
  done
)

# PostgreSQL from Debian's postgresql package, for the results server's store tests (internal/testutil/pgtest runs initdb
# and postgres from $PG_BIN_DIR, else /usr/lib/postgresql/<version>/bin, itself, on a free port).
postgres_installed() {
  if [[ -n ${PG_BIN_DIR:-} ]]; then [[ -x $PG_BIN_DIR/postgres ]]; else compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; fi
}
install_postgres() (
  postgres_installed && return
  log "installing postgresql (apt)"
  "$HACK_DIR/apt-install.sh" postgresql
  postgres_installed || { log "postgresql installed, but no postgres in ${PG_BIN_DIR:-/usr/lib/postgresql/*/bin}"; exit 1; }
  # The package creates and starts a system cluster on 5432; the tests run their own on free ports.
  as_root systemctl stop postgresql >/dev/null 2>&1 || true
  as_root systemctl disable postgresql >/dev/null 2>&1 || true
  # Without systemd (containers) the package starts the cluster through pg_ctlcluster.
  if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters --no-header 2>/dev/null | while read -r ver name _; do
      as_root pg_ctlcluster "$ver" "$name" stop >/dev/null 2>&1 || true
    done
  fi
)

# Gatekeeper, run out of cluster against the test kube-apiserver by testbed/internal/gatekeepertest, and the files of its
# module zip the tests need: the CRDs of its Helm chart and its release manifest (deploy/gatekeeper.yaml, whose
# audit Deployment the sidecar component of distributions/otelcol-policy/kubernetes patches).
GATEKEEPER_VERSION=${GATEKEEPER_VERSION:-v3.23.1}
install_gatekeeper() (
  local bin=$BIN_DIR/gatekeeper-$GATEKEEPER_VERSION
  local files=$CACHE_DIR/gatekeeper-$GATEKEEPER_VERSION
  local module=github.com/open-policy-agent/gatekeeper/v3@$GATEKEEPER_VERSION
  if [[ ! -f $files/gatekeeper.yaml ]]; then
    local json src
    json=$(go mod download -json "$module" 2>&1) || { log "cannot download $module: $json"; exit 1; }
    src=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")
    rm -rf "$files.tmp" && mkdir -p "$files.tmp/crds"
    cp "$src"/charts/gatekeeper/crds/*.yaml "$files.tmp/crds/"
    cp "$src/deploy/gatekeeper.yaml" "$files.tmp/"
    # The module cache is read-only; the copies need not be.
    chmod -R u+w "$files.tmp"
    rm -rf "$files" && mv "$files.tmp" "$files"
  fi
  [[ -x $bin ]] && return
  log "building gatekeeper $GATEKEEPER_VERSION (6-8 minutes on 2 cores, once)"
  local dir=$CACHE_DIR/gatekeeper-build-$GATEKEEPER_VERSION
  mkdir -p "$dir"
  GOBIN=$dir go install "$module" 2>"$dir/build.log" ||
    build_failed "gatekeeper" "$dir"
  mv "$dir/gatekeeper" "$bin"
)

# Helm, whose lint and template the chart's tests run (testbed/distribution/helm_test.go).
HELM_VERSION=${HELM_VERSION:-v3.22.0}
install_helm() (
  local bin=$BIN_DIR/helm-$HELM_VERSION
  [[ -x $bin ]] && return
  log "building helm $HELM_VERSION (about 5 minutes on 2 cores, once)"
  local dir=$CACHE_DIR/helm-build-$HELM_VERSION
  mkdir -p "$dir"
  GOBIN=$dir go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" 2>"$dir/build.log" ||
    build_failed "helm" "$dir"
  mv "$dir/helm" "$bin"
)

# Prometheus and promtool from Debian's prometheus package, unpacked into the cache rather than installed: the
# package would start a system Prometheus on :9090, and testbed/internal/promtest runs its own on free ports.
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-2.42}
install_prometheus() (
  local bin=$BIN_DIR/prometheus-$PROMETHEUS_VERSION tool=$BIN_DIR/promtool-$PROMETHEUS_VERSION
  [[ -x $bin && -x $tool ]] && return
  log "unpacking prometheus $PROMETHEUS_VERSION (apt-get download, seconds)"
  local dir=$CACHE_DIR/prometheus-deb
  rm -rf "$dir" && mkdir -p "$dir/root"
  # apt-get download writes to the working directory; the package lists are updated only when it fails.
  (cd "$dir" && apt-get download -q prometheus >/dev/null 2>&1) ||
    { as_root apt-get update -q >/dev/null && (cd "$dir" && apt-get download -q prometheus >/dev/null); } ||
    { log "cannot download Debian's prometheus package"; exit 1; }
  local deb version
  deb=$(echo "$dir"/prometheus_*.deb)
  version=$(dpkg-deb -f "$deb" Version)
  [[ $version == "$PROMETHEUS_VERSION".* ]] ||
    { log "Debian serves prometheus $version, the tests expect $PROMETHEUS_VERSION (set PROMETHEUS_VERSION)"; exit 1; }
  dpkg-deb -x "$deb" "$dir/root"
  cp "$dir/root/usr/bin/promtool" "$tool.tmp" && mv "$tool.tmp" "$tool"
  cp "$dir/root/usr/bin/prometheus" "$bin.tmp" && mv "$bin.tmp" "$bin"
  rm -rf "$dir"
)

# VictoriaLogs, the log store the log store recipes' test writes to over OTLP and queries with LogsQL
# (testbed/internal/vlogstest). Built from its module: `go install` of a version ignores the worktree's module, and
# -mod=mod keeps a GOFLAGS=-mod=vendor of the environment from refusing it.
VICTORIALOGS_VERSION=${VICTORIALOGS_VERSION:-v1.52.1}
install_victorialogs() (
  local bin=$BIN_DIR/victoria-logs-$VICTORIALOGS_VERSION
  [[ -x $bin ]] && return
  log "building victoria-logs $VICTORIALOGS_VERSION (about a minute on 2 cores, once)"
  local dir=$CACHE_DIR/victoria-logs-build-$VICTORIALOGS_VERSION
  mkdir -p "$dir"
  GOFLAGS=-mod=mod GOBIN=$dir go install "github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@$VICTORIALOGS_VERSION" \
    2>"$dir/build.log" || build_failed "victoria-logs" "$dir"
  mv "$dir/victoria-logs" "$bin"
)

# Chromium from Debian's chromium package, the headless browser testbed/internal/chromiumtest drives over the DevTools
# protocol to test the results server's web UI; $CHROMIUM_BIN, as there, names another one.
install_chromium() (
  local bin=${CHROMIUM_BIN:-/usr/bin/chromium}
  [[ -x $bin ]] && return
  log "installing chromium (apt)"
  "$HACK_DIR/apt-install.sh" chromium
  [[ -x $bin ]] || { log "chromium installed, but $bin is not there"; exit 1; }
)

# Gatekeeper, Helm, VictoriaLogs and etcd first: builds run in the background while the others install or build,
# and the script fails if one of them failed. The apt users (prometheus, postgres, chromium) run one after the
# other: apt's locks allow one package list update at a time.
[[ $# -gt 0 ]] || set -- gatekeeper helm victorialogs etcd prometheus kube-apiserver opa minio postgres chromium
background=()
for s in "$@"; do
  case $s in
    etcd) build_etcd & background+=($!) ;;
    kube-apiserver) build_kube_apiserver ;;
    opa) install_opa ;;
    minio) install_minio ;;
    postgres) install_postgres ;;
    gatekeeper) install_gatekeeper & background+=($!) ;;
    helm) install_helm & background+=($!) ;;
    victorialogs) install_victorialogs & background+=($!) ;;
    prometheus) install_prometheus ;;
    chromium) install_chromium ;;
    *) log "unknown server $s"; exit 2 ;;
  esac
done
for pid in "${background[@]}"; do
  wait "$pid"
done
