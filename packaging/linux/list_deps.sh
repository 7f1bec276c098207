#!/usr/bin/env bash
# What the bundle needs from the system, and its glibc floor. Run from the repo root:
#     bash packaging/linux/list_deps.sh [dist/guiapp]
# Prints: (1) system libraries that some ELF file in the bundle links against and the
# Debian packages that own them (what the .deb's Depends must cover), (2) libraries not
# found on this machine, (3) the newest GLIBC_/GLIBCXX_ symbol version required (the floor).
set -euo pipefail
BUNDLE=$(readlink -f "${1:-dist/guiapp}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
find "$BUNDLE" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0 |
  while IFS= read -r -d '' f; do
    head -c 4 "$f" 2>/dev/null | grep -q 'ELF' && printf '%s\n' "$f"
  done >"$TMP/elves"
echo "ELF files in the bundle: $(wc -l <"$TMP/elves")"
# ldd resolves against the bundle's own copies only through RPATH/$ORIGIN; for the list of
# system libraries we want those that resolve outside the bundle.
LD_LIBRARY_PATH="$BUNDLE/_internal:$BUNDLE/_internal/PySide6/Qt/lib" \
  xargs -a "$TMP/elves" -d '\n' ldd 2>/dev/null >"$TMP/ldd" || true
grep -o '=> /[^ ]*' "$TMP/ldd" | cut -c4- | grep -v "^$BUNDLE" | sort -u >"$TMP/syslibs"
echo
echo "== system libraries linked ($(wc -l <"$TMP/syslibs")) and their packages"
while read -r lib; do
  pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1 || true)
  [[ -z $pkg ]] && pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1 || true)
  printf '%-50s %s\n' "$lib" "${pkg:-?}"
done <"$TMP/syslibs" | tee "$TMP/pkgs"
echo
echo "== packages: $(awk '{print $2}' "$TMP/pkgs" | sort -u | tr '\n' ' ')"
echo
echo "== not found on this machine (install these, or they must be in Depends)"
grep 'not found' "$TMP/ldd" | awk '{print $1}' | sort -u || echo "(none)"
echo
echo "== glibc floor (newest symbol versions required by any ELF file in the bundle)"
xargs -a "$TMP/elves" -d '\n' objdump -T 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' |
  sort -u -V | tail -1 | sed 's/^/newest GLIBC_:    /'
xargs -a "$TMP/elves" -d '\n' objdump -T 2>/dev/null | grep -oE 'GLIBCXX_[0-9]+(\.[0-9]+)+' |
  sort -u -V | tail -1 | sed 's/^/newest GLIBCXX_:  /'
echo "files needing the newest GLIBC_:"
newest=$(xargs -a "$TMP/elves" -d '\n' objdump -T 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sort -u -V | tail -1)
while IFS= read -r f; do
  objdump -T "$f" 2>/dev/null </dev/null | grep -F "($newest)" >/dev/null && echo "  ${f#"$BUNDLE"/}"
done <"$TMP/elves"
