#!/bin/bash
# A script child's spawn with and without a pre_exec hook, by the parent's resident size
# (benches/spawn/cost.rs; std only, built here with rustc -O).
# Usage: benches/spawn_cost.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rustc -O --edition 2021 "$here/spawn/cost.rs" -o "$out/spawn_cost"
"$out/spawn_cost"
