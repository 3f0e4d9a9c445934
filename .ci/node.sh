#!/usr/bin/env bash
# Usage: .ci/node.sh <version>   prints the bin directory of that Node release, installing it first.
# Node releases come from the npm registry (the node-<os>-<cpu> packages: one file, bin/node), the
# only registry CI reaches; each is pinned by version and cached under .ci/cache/, which git ignores.
set -euo pipefail
version="$1"
root="$(cd "$(dirname "$0")" && pwd)/cache"
case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "no Node package for $(uname -s)" >&2; exit 1 ;; esac
case "$(uname -m)" in x86_64|amd64) cpu=x64 ;; aarch64|arm64) cpu=arm64 ;; *) echo "no Node package for $(uname -m)" >&2; exit 1 ;; esac
dir="$root/node-$version-$os-$cpu"
if [ ! -x "$dir/bin/node" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-$os-$cpu@$version" >/dev/null)
  mkdir -p "$tmp/x" && tar xzf "$tmp"/node-"$os"-"$cpu"-"$version".tgz -C "$tmp/x"
  mkdir -p "$root" && rm -rf "$dir" && mkdir -p "$dir/bin"
  mv "$tmp/x/package/bin/node" "$dir/bin/node"
fi
[ "$("$dir/bin/node" --version)" = "v$version" ] || { echo "node $version at $dir does not run" >&2; exit 1; }
echo "$dir/bin"
