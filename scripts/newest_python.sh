#!/usr/bin/env bash
# Print the path of the newest Python (3.12 or later) on this machine that actually runs,
# or nothing. Looks on PATH and in pyenv's versions (a pyenv shim for a version that is not
# activated exists but fails, so every candidate is run once).
set -uo pipefail
candidates=()
for minor in 15 14 13 12; do
  candidates+=("$(command -v "python3.$minor" 2>/dev/null || true)")
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for dir in "$root"/versions/3."$minor".*; do
    [ -x "$dir/bin/python3.$minor" ] && candidates+=("$dir/bin/python3.$minor")
  done
done
for py in "${candidates[@]}"; do
  [ -n "$py" ] && "$py" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && {
    echo "$py"
    exit 0
  }
done
exit 0
