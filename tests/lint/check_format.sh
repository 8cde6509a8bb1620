#!/usr/bin/env bash
# Every tracked C++ source passes clang-format with the repository's .clang-format.
set -u
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "clang-format missing"; exit 77; }
files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null)
[[ -n "$files" ]] || { echo "no git checkout: nothing to check"; exit 77; }
out=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep "warning:" | cut -d: -f1 | sort -u)
if [[ -n "$out" ]]; then
  echo "not clang-formatted:"
  echo "$out"
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -l) files clean"
