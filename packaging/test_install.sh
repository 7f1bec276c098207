#!/usr/bin/env bash
# Installer test (`make package-test`; not part of `make test`). Run as root from the repo root:
#
#     bash packaging/test_install.sh [dist/guiapp_VERSION_amd64.deb]
#
# 1. installs the .deb with dpkg -i (apt-get install -f pulls missing Depends), checks the files,
#    the .desktop entry (desktop-file-validate) and the hicolor icons;
# 2. as a NON-ROOT user, from another working directory and with a minimal environment:
#    guiapp --self-test, guiapp --smoke (GUI, offscreen), guiapp --screenshots (if this build
#    has the flag), a tiny generate (2 spawn workers) + info + check + train through /usr/bin/guiapp;
# 3. uninstalls with dpkg -r, then dpkg -P, and checks that nothing is left behind.
# KEEP=1 leaves the package installed and the work folder in place for a look afterwards.
set -euo pipefail
START_DIR=$(pwd)  # the repository root (make package-test runs from there)

DEB=${1:-}
if [[ -z "$DEB" ]]; then
  DEB=$(ls -t dist/guiapp_*_amd64.deb 2>/dev/null | head -1 || true)
fi
TEST_USER=${GUIAPP_TEST_USER:-guiapp-test}
PKG=guiapp
FAILS=0
STEP_T0=0

say() { printf '\n== %s\n' "$*"; }
ok() { printf '   ok   %-28s %s\n' "$1" "${2:-}"; }
bad() { printf '   FAIL %-28s %s\n' "$1" "${2:-}"; FAILS=$((FAILS + 1)); }
skip() { printf '   SKIP %-28s %s\n' "$1" "${2:-}"; }
t_start() { STEP_T0=$(date +%s%N); }
t_took() { local ds=$((($(date +%s%N) - STEP_T0) / 100000000)); printf '%d.%d s' $((ds / 10)) $((ds % 10)); }

if [[ $EUID -ne 0 ]]; then
  echo "test_install.sh: run as root (it installs a .deb with dpkg -i): sudo make package-test" >&2
  exit 2
fi
if [[ -z "$DEB" || ! -f "$DEB" ]]; then
  echo "test_install.sh: no .deb found (looked for dist/guiapp_*_amd64.deb); run 'make package' first" >&2
  exit 2
fi
DEB=$(readlink -f "$DEB")

# ---------------------------------------------------------------------------- install
say "install $(basename "$DEB") ($(du -h "$DEB" | cut -f1))"
if dpkg -s "$PKG" >/dev/null 2>&1; then
  echo "   (a previous $PKG is installed: removing it first)"
  dpkg -P "$PKG" >/dev/null
fi
t_start
if ! dpkg -i "$DEB"; then
  echo "   dpkg -i left dependencies unmet: apt-get install -f"
  apt-get update -q >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -f -y -q
fi
dpkg -s "$PKG" | grep -q '^Status: install ok installed' && ok "dpkg -i" "$(t_took)" || bad "dpkg -i" "not installed"

[[ -x /opt/guiapp/guiapp ]] && ok "/opt/guiapp/guiapp" || bad "/opt/guiapp/guiapp" "missing"
[[ "$(readlink -f /usr/bin/guiapp)" == /opt/guiapp/guiapp ]] && ok "/usr/bin/guiapp" "-> /opt/guiapp/guiapp" \
  || bad "/usr/bin/guiapp" "does not lead to /opt/guiapp/guiapp"
DESKTOP=/usr/share/applications/guiapp.desktop
if [[ ! -f $DESKTOP ]]; then
  bad "desktop entry" "missing $DESKTOP"
elif command -v desktop-file-validate >/dev/null; then
  out=$(desktop-file-validate "$DESKTOP" 2>&1) && [[ -z "$out" ]] && ok "desktop-file-validate" \
    || bad "desktop-file-validate" "$out"
else
  skip "desktop-file-validate" "not installed (apt-get install desktop-file-utils)"
fi
for s in 16 32 48 64 128 256; do
  f=/usr/share/icons/hicolor/${s}x${s}/apps/guiapp.png
  [[ -f $f ]] || bad "icon ${s}x${s}" "missing $f"
done
ok "icons" "hicolor 16..256"
# ldd as the app's loader sees it: PyInstaller's bootloader puts _internal on LD_LIBRARY_PATH.
# libwayland-cursor/-egl serve only Qt's Wayland plugin: Recommends, not Depends.
ldd_out=$(find /opt/guiapp -name '*.so*' -type f -print0 |
  LD_LIBRARY_PATH=/opt/guiapp/_internal xargs -0 ldd 2>/dev/null | grep 'not found' | awk '{print $1}' | sort -u || true)
missing=$(grep -v -E '^libwayland-(cursor|egl)\.so' <<<"$ldd_out" || true)
optional=$(grep -E '^libwayland-(cursor|egl)\.so' <<<"$ldd_out" | tr '\n' ' ' || true)
[[ -z "$missing" ]] && ok "ldd (all .so resolve)" "${optional:+(optional, for Wayland only: $optional)}" \
  || bad "ldd" "$(tr '\n' ' ' <<<"$missing")"

# ---------------------------------------------------------------------------- as a user
id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$TEST_USER"
USER_HOME=$(getent passwd "$TEST_USER" | cut -d: -f6)
WORK=$(mktemp -d /tmp/guiapp-install-test.XXXXXX)
chown "$TEST_USER": "$WORK"
cp /opt/guiapp/_internal/resources/demo/demo.gproj "$WORK/demo.gproj" 2>/dev/null || true
chown "$TEST_USER": "$WORK"/* 2>/dev/null || true

# A clean login-like environment: nothing from this shell (no venv, no PYTHONPATH, no repo cwd).
# QPA=offscreen by default; QPA= (empty) leaves Qt to pick xcb from DISPLAY (under Xvfb).
as_user() {
  runuser -u "$TEST_USER" -- env -i HOME="$USER_HOME" USER="$TEST_USER" LANG=C.UTF-8 \
    PATH=/usr/local/bin:/usr/bin:/bin ${QPA-QT_QPA_PLATFORM=offscreen} TF_CPP_MIN_LOG_LEVEL=2 \
    bash -c "cd '$WORK' && $1"
}
run_step() {  # name, command
  local name=$1 cmd=$2 log="$WORK/${1//[^a-z0-9]/_}.log"
  t_start
  if as_user "$cmd" >"$log" 2>&1; then ok "$name" "$(t_took)"; return 0; fi
  local rc=$?
  bad "$name" "exit $rc after $(t_took); last lines of $log:"
  tail -15 "$log" | sed 's/^/        /'
  return 0
}

say "as user '$TEST_USER' in $WORK (not the repo, not root)"
t_start
if as_user "guiapp --self-test" >"$WORK/selftest.log" 2>&1; then
  ok "guiapp --self-test" "$(t_took)"
else
  bad "guiapp --self-test" "exit $? after $(t_took)"
fi
sed 's/^/        /' "$WORK/selftest.log"

run_step "guiapp --version" "guiapp --version"
if [[ -f $WORK/demo.gproj ]]; then
  run_step "guiapp --smoke (GUI)" "guiapp --smoke '$WORK/smoke.png' '$WORK/demo.gproj'"
  [[ -s $WORK/smoke.png ]] && ok "smoke.png written" "$(du -h "$WORK/smoke.png" | cut -f1)"
  # the real X11 path (xcb platform plugin and the xcb libraries of Depends) under Xvfb
  if ! command -v xvfb-run >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q xvfb xauth >/dev/null 2>&1 || true
  fi
  if command -v xvfb-run >/dev/null; then
    QPA="" run_step "guiapp --smoke under Xvfb" \
      "xvfb-run -a -s '-screen 0 1280x800x24' guiapp --smoke '$WORK/smoke-x11.png' '$WORK/demo.gproj'"
    [[ -s $WORK/smoke-x11.png ]] && ok "smoke-x11.png written" "$(du -h "$WORK/smoke-x11.png" | cut -f1)"
  else
    skip "guiapp --smoke under Xvfb" "xvfb-run not available (apt-get install xvfb xauth)"
  fi
fi

if as_user "guiapp --help" 2>&1 | grep -q -- '--screenshots'; then
  run_step "guiapp --screenshots" "guiapp --screenshots '$WORK/shots'"
  n=$(find "$WORK/shots" -name '*.png' 2>/dev/null | wc -l)
  [[ $n -gt 0 ]] && ok "screenshots" "$n PNG in $WORK/shots" || bad "screenshots" "no PNG written"
  # Keep them for a person to look at: taken by the installed binary, not the source tree.
  rm -rf "$START_DIR/dist/installed-screenshots" && cp -r "$WORK/shots" "$START_DIR/dist/installed-screenshots" || true
else
  skip "guiapp --screenshots" "'guiapp --help' does not list --screenshots in this build (the flag comes with the GUI work)"
fi

run_step "guiapp generate (2 workers)" \
  "guiapp generate cells.h5 --generator patterns2d --n 3000 --workers 2 --seed 1 --shard-rows 1024"
run_step "guiapp info" "guiapp info cells.h5"
run_step "guiapp check --full" "guiapp check cells.h5 --full"
run_step "guiapp train (1 epoch, 3 steps)" \
  "guiapp train --data cells.h5 --model cnn2d-small --out runs/t1 --epochs 1 --max-steps 3"
if ls "$WORK"/runs/t1/*.keras >/dev/null 2>&1 || find "$WORK/runs/t1" -name '*.keras' 2>/dev/null | grep -q .; then
  ok "run folder" "$(find "$WORK/runs/t1" -name '*.keras' | wc -l) .keras file(s) in runs/t1"
elif [[ -d $WORK/runs/t1 ]]; then
  bad "run folder" "no .keras file in runs/t1: $(ls "$WORK/runs/t1" | tr '\n' ' ')"
fi
# nothing may have been written into the installed tree (read-only for users anyway)
stray=$(find /opt/guiapp -newer "$DEB" \( -name '__pycache__' -o -name '*.pyc' \) 2>/dev/null | head -3 || true)
[[ -z "$stray" ]] && ok "no writes under /opt/guiapp" || bad "writes under /opt/guiapp" "$stray"

# ---------------------------------------------------------------------------- uninstall
if [[ "${KEEP:-0}" == 1 ]]; then
  say "KEEP=1: leaving $PKG installed and $WORK in place"
else
  say "uninstall"
  dpkg -r "$PKG" >/dev/null && ok "dpkg -r" || bad "dpkg -r"
  dpkg -P "$PKG" >/dev/null 2>&1 || true
  left=""
  for p in /opt/guiapp /usr/bin/guiapp "$DESKTOP" /usr/share/mime/packages/guiapp.xml \
    /usr/share/doc/guiapp; do
    [[ -e $p || -L $p ]] && left+="$p "
  done
  left+=$(find /usr/share/icons/hicolor -name 'guiapp.png' 2>/dev/null | tr '\n' ' ')
  [[ -z "${left// /}" ]] && ok "nothing left" || bad "left after dpkg -r" "$left"
  dpkg -s "$PKG" >/dev/null 2>&1 && bad "dpkg status" "still known to dpkg" || true
  rm -rf "$WORK"
fi

say "result"
if [[ $FAILS -eq 0 ]]; then
  echo "test_install.sh: all checks passed"
else
  echo "test_install.sh: $FAILS check(s) FAILED"
  exit 1
fi
