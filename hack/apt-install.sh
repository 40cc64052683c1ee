#!/usr/bin/env bash
# Installs Debian packages quietly, updating the package lists only when the first attempt fails.
# Usage: hack/apt-install.sh PACKAGE...
set -euo pipefail
as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi
}
install() { as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
install "$@" || { as_root apt-get update -q >/dev/null && install "$@"; }
