"""A failed job's fix in the GUI's own words: the option its error names becomes a control.

The CLI's messages name their fix as a flag (``pass --on-error skip``); a person who
started the job from a dialog needs the control instead ("set On a bad row to skip in
the Import dialog"). The job's ``failed`` event names the option its error concerns
(:class:`~guiapp.core.events.Failure`, docs/ERRORS.md), so the words are looked up by
that option, never found by reading the message: :func:`explain` gives (what went wrong,
what to do) for a failure.
"""

from __future__ import annotations

from guiapp.core.events import Failure

#: The fix in the GUI's words for a failure that names an option, by ``"COMMAND OPTION"``
#: first (the same flag can mean another control in another job), then by ``OPTION``.
FIX_WORDS: dict[str, str] = {
    "--on-error": "set “On a bad row” to skip in the Import dialog to leave bad rows out",
    "generate --overwrite": (
        "Press Resume in the Jobs panel to finish it, or tick “Replace an existing dataset "
        "at this path” in the Generate dialog to replace it"
    ),
    "--overwrite": (
        "Choose another Output, or tick “Replace an existing dataset at this path” to replace it"
    ),
    "--on-nonfinite": (
        "Clean the source data; the GUI has no choice to skip rows holding NaN/Inf (the "
        "CLI's --on-nonfinite skip does)"
    ),
    "--length": "Set Length in the Import dialog to pad or truncate the rows to one length",
    "--data-field": "Set “Data field” in the Import dialog to the column's name or 0-based number",
    "--label-field": (
        "Set “Label field” in the Import dialog to the column's name or 0-based number"
    ),
    "--labels": "Put the .npy files in one subfolder per class and import the folder (npy-dir)",
    "--group-field": (
        "Set “Group field” in the Import dialog to a field every row has (or leave it empty); "
        "with “On a bad row” skip, rows without a usable group are left out"
    ),
    "--keep-fields": "Set “Keep fields” in the Import dialog to fields the rows have",
    "--class-names": "Fix the labels, or set “Class names” in the Import dialog to every class",
    "--delimiter": "Set Delimiter in the Import dialog to one character",
    "--dtype": "Choose a Dtype in the Import dialog",
    "--x-key": "Name the data and label arrays in the Import dialog",
    "--format": "Pick the file's format",
    "predict --split": "Choose all rows as the Split",
    "--val": "Set Validation, Test or k-fold on the Training page",
    "--devices": "Choose other Devices on the Training page",
    "--data": "Choose another dataset, or fix this one on the Datasets page",
    "--restart": "Start (a new run) instead of Resume",
    "--resume": "Start (a new run) instead of Resume",
    "train --out": "Start a new run (it gets a new folder) instead of Resume",
    "--out": "Choose another Output",
    "--which": "Choose the run's other Model (best or last), or train the run again",
}

GENERAL_ADVICE = "Open the log for the details; Resume continues a stopped or failed job."


def fix_in_gui_words(failure: Failure, command: str = "") -> str | None:
    """The GUI's words for the fix of ``failure`` (from a ``command`` job), or None when
    its option (if any) has none."""
    if failure.option is None:
        return None
    return FIX_WORDS.get(f"{command} {failure.option}") or FIX_WORDS.get(failure.option)


def explain(failure: Failure, command: str = "") -> tuple[str, str]:
    """(what went wrong, what to do) for a failed job: the message without its fix, and
    the fix in the GUI's words (its option's), else as the error gave it, else the
    general advice to read the log."""
    what = failure.what() or "the job failed without a message"
    fix = fix_in_gui_words(failure, command) or failure.fix or GENERAL_ADVICE
    return _sentence(what), _sentence(fix[0].upper() + fix[1:])


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."
