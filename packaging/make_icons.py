"""Draw the guiapp icon with QPainter and write resources/icons/guiapp-<size>.png
(16..256) and guiapp.ico (Windows; 16, 32, 48, 256). macOS's .icns is made from the PNGs
on the Mac (packaging/macos/README.md).

    QT_QPA_PLATFORM=offscreen python packaging/make_icons.py [OUT_DIR]

The glyph: a deep-blue rounded tile holding a 3x3 grid of sample cells (the small arrays
guiapp stores) and a falling orange loss curve across them (the training it does).
Deterministic: the same PySide6 gives the same PNGs, so the PNGs are committed and this
script is only rerun when the design changes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 32, 48, 64, 128, 256)


def draw(size: int) -> object:
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter, QPainterPath, QPen

    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    s = float(size)

    # tile
    margin = max(0.5, s * 0.04)
    tile = QRectF(margin, margin, s - 2 * margin, s - 2 * margin)
    grad = QLinearGradient(tile.topLeft(), tile.bottomRight())
    grad.setColorAt(0.0, QColor("#1f4e9c"))
    grad.setColorAt(1.0, QColor("#0d2350"))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(grad)
    radius = s * 0.18
    p.drawRoundedRect(tile, radius, radius)

    # 3x3 grid of sample cells, in a fixed pattern of intensities
    shades = (
        "#9cc4ff",
        "#4f86d9",
        "#2e62b5",
        "#4f86d9",
        "#d6e6ff",
        "#4f86d9",
        "#2e62b5",
        "#4f86d9",
        "#9cc4ff",
    )
    inner = tile.adjusted(s * 0.16, s * 0.16, -s * 0.16, -s * 0.16)
    gap = max(1.0, s * 0.035) if size >= 32 else 1.0
    cell = (inner.width() - 2 * gap) / 3
    for i, shade in enumerate(shades):
        r, c = divmod(i, 3)
        rect = QRectF(inner.left() + c * (cell + gap), inner.top() + r * (cell + gap), cell, cell)
        p.setBrush(QColor(shade))
        cr = cell * 0.18 if size >= 48 else 0.0
        p.drawRoundedRect(rect, cr, cr)

    # falling loss curve
    path = QPainterPath()
    path.moveTo(QPointF(0.15 * s, 0.22 * s))
    path.cubicTo(
        QPointF(0.30 * s, 0.74 * s), QPointF(0.50 * s, 0.76 * s), QPointF(0.86 * s, 0.77 * s)
    )
    width = max(1.5, s * 0.06)
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.setPen(
        QPen(
            QColor("#0d2350"),
            width * 1.9,
            Qt.PenStyle.SolidLine,
            Qt.PenCapStyle.RoundCap,
            Qt.PenJoinStyle.RoundJoin,
        )
    )
    p.drawPath(path)
    p.setPen(
        QPen(
            QColor("#ff9f1c"),
            width,
            Qt.PenStyle.SolidLine,
            Qt.PenCapStyle.RoundCap,
            Qt.PenJoinStyle.RoundJoin,
        )
    )
    p.drawPath(path)
    p.end()
    return img


def write_ico(pngs: dict[int, bytes], path: Path) -> None:
    """A Windows .ico holding PNG-compressed images (readable by Windows Vista and later)."""
    import struct

    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        data = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    path.write_bytes(header + entries + blobs)


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    root = Path(__file__).resolve().parent.parent
    out = Path(argv[0]) if argv else root / "resources" / "icons"
    out.mkdir(parents=True, exist_ok=True)
    app = QGuiApplication.instance() or QGuiApplication([])
    for size in SIZES:
        path = out / f"guiapp-{size}.png"
        if not draw(size).save(str(path), "PNG"):  # type: ignore[attr-defined]
            sys.stderr.write(f"make_icons: could not write {path}\n")
            return 1
        print(path)
    ico = out / "guiapp.ico"
    write_ico({s: (out / f"guiapp-{s}.png").read_bytes() for s in (16, 32, 48, 256)}, ico)
    print(ico)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
