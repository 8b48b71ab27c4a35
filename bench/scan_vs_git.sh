#!/usr/bin/env bash
# Scan mode against git on a copy of Go's source tree, in one run:
#   first scan            vs  git add -A into a fresh repository
#   unchanged re-scan     vs  git status
#   re-scan, 100 touched  vs  git status (after the same touches)
#   store bytes           vs  .git/objects
# Usage: bench/scan_vs_git.sh [SRC_DIR]   (default: $(go env GOROOT)/src)
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-$(go env GOROOT)/src}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/ckpt" ./cmd/ckpt
cp -r "$src" "$tmp/ws"
ws=$tmp/ws
files=$(find "$ws" -type f | wc -l)
bytes=$(du -sb "$ws" | cut -f1)
echo "tree: $src copy, $files files, $((bytes / 1000000)) MB; $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"

ms() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
ck() { "$tmp/ckpt" --workspace "$ws" --store "$tmp/store" "$@"; }
export GIT_DIR=$tmp/git GIT_WORK_TREE=$ws GIT_CONFIG_GLOBAL=/dev/null
git init -q

sync
t_git_add=$(ms git add -A)
sync
t_scan=$(ms ck turn --scan "first scan")
t_git_status=$(ms git status --porcelain)
t_rescan=$(ms ck turn --scan "unchanged re-scan")
# The stat cache distrusts entries stat'ed within 2 s of a file's mtime
# (git's racy rule); the copy is fresh, so scan once more after waiting.
sleep 2
ck turn --scan "settle" >/dev/null
t_rescan2=$(ms ck turn --scan "unchanged re-scan, settled")
find "$ws" -name '*.go' | sort | head -100 >"$tmp/touch" || true
while read -r f; do echo "// touched" >>"$f"; done <"$tmp/touch"
t_git_status100=$(ms git status --porcelain)
t_rescan100=$(ms ck turn --scan "re-scan after touching 100 files")
store_bytes=$(du -sb "$tmp/store/blobs" | cut -f1)
git_bytes=$(du -sb "$tmp/git/objects" | cut -f1)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) b = 1; printf "%.2f", a / b }'; }
printf '%-36s %8s %8s %8s\n' "" "ckpt" "git" "ckpt/git"
printf '%-36s %6d ms %6d ms %8s\n' "first scan vs git add -A" "$t_scan" "$t_git_add" "$(ratio "$t_scan" "$t_git_add")"
printf '%-36s %6d ms %6d ms %8s\n' "unchanged re-scan vs git status" "$t_rescan" "$t_git_status" "$(ratio "$t_rescan" "$t_git_status")"
printf '%-36s %6d ms %6d ms %8s\n' "  (settled, past the racy window)" "$t_rescan2" "$t_git_status" "$(ratio "$t_rescan2" "$t_git_status")"
printf '%-36s %6d ms %6d ms %8s\n' "re-scan after touching 100 files" "$t_rescan100" "$t_git_status100" "$(ratio "$t_rescan100" "$t_git_status100")"
printf '%-36s %5d MB %5d MB %8s\n' "store bytes vs .git/objects" "$((store_bytes / 1000000))" "$((git_bytes / 1000000))" "$(ratio "$store_bytes" "$git_bytes")"
