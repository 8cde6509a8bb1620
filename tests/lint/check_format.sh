#!/usr/bin/env bash
# Every C++ source passes clang-format with the repository's .clang-format: the tracked
# files of a git checkout, else every source outside build directories.
set -u
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null ||
  { echo "clang-format is not installed: run deploy/install-deps.sh"; exit 1; }
files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null)
if [[ -z "$files" ]]; then
  files=$(find . -path './build*' -prune -o -type f \( -name '*.cpp' -o -name '*.hpp' \) -print)
fi
[[ -n "$files" ]] || { echo "no C++ sources found under $(pwd)"; exit 1; }
out=$(echo "$files" | xargs clang-format --dry-run 2>&1 | grep "warning:" | cut -d: -f1 | sort -u)
if [[ -n "$out" ]]; then
  echo "not clang-formatted:"
  echo "$out"
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -l) files clean"
