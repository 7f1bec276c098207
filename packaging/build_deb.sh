#!/usr/bin/env bash
# Build dist/guiapp-VERSION-linux-x86_64.tar.gz and dist/guiapp_VERSION_amd64.deb from the
# PyInstaller bundle dist/guiapp/ (made by packaging/guiapp.spec). Run from the repo root:
#
#     bash packaging/build_deb.sh            (`make package` runs it after PyInstaller)
#
# .deb layout: /opt/guiapp (the bundle), /usr/bin/guiapp -> /opt/guiapp/guiapp,
# /usr/share/applications/guiapp.desktop, /usr/share/icons/hicolor/NxN/apps/guiapp.png,
# /usr/share/mime/packages/guiapp.xml (*.gproj), /usr/share/doc/guiapp/copyright.
# The icon cache, desktop and MIME databases are refreshed by the dpkg triggers of
# gtk-update-icon-cache, desktop-file-utils and shared-mime-info, so no maintainer scripts.
set -euo pipefail

BUNDLE=${BUNDLE:-dist/guiapp}
DIST=${DIST:-dist}
STAGE_ROOT=${STAGE_ROOT:-build/deb}
VERSION=${VERSION:-$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)}
ARCH=$(dpkg --print-architecture 2>/dev/null || echo amd64)
MAINTAINER=${MAINTAINER:-"guiapp maintainers <guiapp@example.org>"}
# Libraries the bundle's Qt (xcb platform plugin, OpenGL, fonts, D-Bus) loads from the system;
# PyInstaller bundles the rest. Checked with `bash packaging/linux/list_deps.sh dist/guiapp`.
DEPENDS=${DEPENDS:-"libc6 (>= 2.35), libstdc++6 (>= 11), libgcc-s1, libexpat1, zlib1g, libglib2.0-0, libfontconfig1, libfreetype6, libdbus-1-3, libx11-6, libx11-xcb1, libxext6, libxrender1, libxkbcommon0, libxkbcommon-x11-0, libxcb1, libxcb-cursor0, libxcb-icccm4, libxcb-image0, libxcb-keysyms1, libxcb-randr0, libxcb-render0, libxcb-render-util0, libxcb-shape0, libxcb-shm0, libxcb-sync1, libxcb-xfixes0, libxcb-xinerama0, libxcb-xkb1, libegl1, libgl1, libopengl0"}
RECOMMENDS="libwayland-client0, libwayland-cursor0, libwayland-egl1, xdg-utils"

[[ -x $BUNDLE/guiapp ]] || { echo "build_deb.sh: no bundle at $BUNDLE (run PyInstaller first)" >&2; exit 2; }
[[ -n $VERSION ]] || { echo "build_deb.sh: no version found in pyproject.toml" >&2; exit 2; }

# ------------------------------------------------------------------ tarball (relocatable)
TARBALL=$DIST/guiapp-$VERSION-linux-x86_64.tar.gz
t0=$(date +%s)
tar -C "$(dirname "$BUNDLE")" --owner=0 --group=0 --numeric-owner -czf "$TARBALL" "$(basename "$BUNDLE")"
echo "build_deb.sh: $TARBALL ($(du -h "$TARBALL" | cut -f1), $(($(date +%s) - t0)) s)"

# ------------------------------------------------------------------ staging tree
PKGDIR=$STAGE_ROOT/guiapp_${VERSION}_${ARCH}
rm -rf "$PKGDIR"
mkdir -p "$PKGDIR/DEBIAN" "$PKGDIR/opt" "$PKGDIR/usr/bin" "$PKGDIR/usr/share/applications" \
  "$PKGDIR/usr/share/mime/packages" "$PKGDIR/usr/share/doc/guiapp"
cp -a "$BUNDLE" "$PKGDIR/opt/guiapp"
find "$PKGDIR/opt/guiapp" \( -name '__pycache__' -o -name '*.pyc' \) -prune -exec rm -rf {} + 2>/dev/null || true
chmod -R u=rwX,go=rX "$PKGDIR/opt/guiapp"
ln -s /opt/guiapp/guiapp "$PKGDIR/usr/bin/guiapp"
install -m 644 packaging/linux/guiapp.desktop "$PKGDIR/usr/share/applications/guiapp.desktop"
install -m 644 packaging/linux/guiapp-mime.xml "$PKGDIR/usr/share/mime/packages/guiapp.xml"
for s in 16 32 48 64 128 256; do
  d=$PKGDIR/usr/share/icons/hicolor/${s}x${s}/apps
  mkdir -p "$d"
  install -m 644 "resources/icons/guiapp-$s.png" "$d/guiapp.png"
done
cat >"$PKGDIR/usr/share/doc/guiapp/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: guiapp
Comment: /opt/guiapp bundles Python, Qt (PySide6, LGPLv3), TensorFlow and Keras (Apache-2.0),
 NumPy, h5py/HDF5 (BSD), pyqtgraph (MIT) and their libraries; their licence files are
 in /opt/guiapp/_internal/*.dist-info.

Files: *
License: MIT
EOF
chmod 644 "$PKGDIR/usr/share/doc/guiapp/copyright"

INSTALLED_KB=$(du -sk --exclude=DEBIAN "$PKGDIR" | cut -f1)
cat >"$PKGDIR/DEBIAN/control" <<EOF
Package: guiapp
Version: $VERSION
Section: science
Priority: optional
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_KB
Depends: $DEPENDS
Recommends: $RECOMMENDS
Homepage: https://example.org/guiapp
Description: desktop workbench for training classifiers on many small arrays
 guiapp makes or imports tens of millions of small arrays (25x25 images, k-mer
 vectors) into a fast sharded HDF5 store, shows them, and trains Keras 3 /
 TensorFlow (CPU build) classifiers on them with live plots and exact resume.
 Every GUI action also runs headless: guiapp generate|import|info|check|train.
 .
 This package is a self-contained PyInstaller bundle installed in /opt/guiapp;
 'guiapp --self-test' checks that Qt, HDF5, TensorFlow and Keras work.
EOF

DEB=$DIST/guiapp_${VERSION}_${ARCH}.deb
t0=$(date +%s)
# xz: readable by every dpkg; zstd (DEB_COMPRESS=zstd) builds much faster, needs dpkg >= 1.21.18.
dpkg-deb --root-owner-group "-Z${DEB_COMPRESS:-xz}" --build "$PKGDIR" "$DEB" >/dev/null
echo "build_deb.sh: $DEB ($(du -h "$DEB" | cut -f1), Installed-Size ${INSTALLED_KB} KiB, $(($(date +%s) - t0)) s)"
