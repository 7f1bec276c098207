"""The Model page's layer list: add, remove and move layers, pick one to edit, mark errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGroupBox, QPushButton, QTableWidget, QTableWidgetItem

from guiapp.core import model as specs
from guiapp.ui.pages.base import SP, PagePart
from guiapp.ui.pages.model.layer_editor import LayerEditor, summary_text
from guiapp.ui.widgets.tables import select_table_rows


class LayerListEditing(PagePart):
    """Mixed into :class:`~guiapp.ui.pages.model.model_page.ModelPage`.

    Uses the page's ``spec``, its layer table ``layers``, the ``editor`` in ``editor_box``,
    the Remove/Up/Down buttons, the checker's ``errors`` and ``edited()``.
    """

    layers: QTableWidget
    editor: LayerEditor
    editor_box: QGroupBox
    remove_button: QPushButton
    up_button: QPushButton
    down_button: QPushButton
    errors: list[dict[str, Any]]
    index: int  # the edited entry of the project's models

    if TYPE_CHECKING:  # the page's own (declared for mypy only: no run-time stand-ins)

        @property
        def spec(self) -> dict[str, Any] | None: ...

        def edited(
            self,
            select: int | None = None,
            rebuild: bool = True,
            what: str = "",
            merge: object = None,
        ) -> None: ...

        def note_position(self) -> None: ...

    def layer_list(self) -> list[dict[str, Any]]:
        spec = self.spec
        return spec["layers"] if spec is not None and isinstance(spec.get("layers"), list) else []

    def selected_layer(self) -> int:
        rows = self.layers.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def add_layer(self, layer_type: str) -> None:
        if self.spec is None:
            return
        at = self.selected_layer() + 1 or len(self.layer_list())
        self.layer_list().insert(at, specs.default_layer(layer_type))
        self.edited(select=at, what=f"Add {layer_type} layer")

    def remove_layer(self) -> None:
        at = self.selected_layer()
        if 0 <= at < len(self.layer_list()):
            kind = self.layer_list().pop(at).get("type", "")
            self.edited(select=min(at, len(self.layer_list()) - 1), what=f"Remove {kind} layer")

    def move_layer(self, step: int) -> None:
        layers, at = self.layer_list(), self.selected_layer()
        to = at + step
        if 0 <= at < len(layers) and 0 <= to < len(layers):
            layers[at], layers[to] = layers[to], layers[at]
            self.edited(
                select=to,
                what=f"Move {layers[to].get('type', '')} layer {'up' if step < 0 else 'down'}",
            )

    def _layer_picked(self) -> None:
        at = self.selected_layer()
        layers = self.layer_list()
        layer = layers[at] if 0 <= at < len(layers) else None
        self.editor_box.setTitle(f"Layer {at}: {layer['type']}" if layer else "Layer")
        self.editor.set_layer(layer)
        self._show_layer_errors()
        self.remove_button.setEnabled(layer is not None)
        self.up_button.setEnabled(layer is not None and at > 0)
        self.down_button.setEnabled(layer is not None and at < len(layers) - 1)
        self.note_position()

    def _layer_edited(self) -> None:
        at = self.selected_layer()
        kind = ""
        if 0 <= at < len(self.layer_list()):
            kind = str(self.layer_list()[at].get("type", ""))
            item = self.layers.item(at, 2)
            if item is not None:
                item.setText(summary_text(self.layer_list()[at]))
        self.edited(
            rebuild=False, what=f"Edit layer {at} ({kind})", merge=("layer", self.index, at)
        )

    def _fill_layers(self, select: int | None = None) -> None:
        layers = self.layer_list()
        self.layers.blockSignals(True)
        self.layers.setRowCount(len(layers))
        for row, layer in enumerate(layers):
            for col, text in enumerate((str(row), str(layer.get("type")), summary_text(layer))):
                self.layers.setItem(row, col, QTableWidgetItem(text))
        self.layers.blockSignals(False)
        if select is not None and 0 <= select < len(layers):
            select_table_rows(self.layers, [select])
        self._layer_picked()
        self._mark_layers()

    def _mark_layers(self) -> None:
        by_row: dict[int, list[str]] = {}
        for e in self.errors:
            if e["layer"]:
                by_row.setdefault(e["layer"][0], []).append(e["message"])
        red = QColor(198, 40, 40)
        warn_icon = self.style().standardIcon(SP.SP_MessageBoxWarning)
        for row in range(self.layers.rowCount()):
            messages = by_row.get(row, [])
            for col in range(3):
                item = self.layers.item(row, col)
                if item is None:
                    continue
                item.setForeground(red if messages else self.palette().text().color())
                item.setToolTip("\n".join(messages))
                if col == 0:
                    item.setIcon(
                        warn_icon if messages else self.style().standardIcon(SP.SP_CustomBase)
                    )

    def _show_layer_errors(self) -> None:
        at = self.selected_layer()
        found: dict[str, str] = {}
        for e in self.errors:
            if e["layer"] == [at] and e["param"]:
                found.setdefault(e["param"], e["problem"])
        self.editor.show_errors(found)
