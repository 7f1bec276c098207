"""A failed job's message in the GUI's own words: the CLI's flags become the controls.

The CLI's messages name their fix as a flag (``pass --on-error skip``); a person who
started the job from a dialog needs the control instead ("set On a bad row to skip in
the Import dialog"). :func:`fix_in_gui_words` rewrites the known flags; :func:`explain`
splits a one-line message into what went wrong and what to do.
"""

from __future__ import annotations

import re

#: (pattern of the CLI's words, the GUI's words); the first match wins, all are applied
FLAG_WORDS: tuple[tuple[str, str], ...] = (
    (
        r"(pass|use|add) --on-error skip( to leave bad rows out)?",
        "set “On a bad row” to skip in the Import dialog to leave bad rows out",
    ),
    (
        r"[Pp]ass --resume to finish it or --overwrite to replace it",
        "Press Resume in the Jobs panel to finish it, or tick “Replace an existing dataset "
        "at this path” to replace it",
    ),
    (
        r"(pass|use|add) --on-nonfinite skip( \(with --overwrite\))?",
        "choose to skip rows holding NaN/Inf (and tick “Replace an existing dataset”)",
    ),
    (
        r"re-?run the same (command|'guiapp \w+') with --resume",
        "press Resume on the job's row in the Jobs panel",
    ),
    (r"[Pp]ass --resume", "press Resume in the Jobs panel"),
    (r"(pass|use) --overwrite", "tick “Replace an existing dataset at this path”"),
    (r"pass --length (\d+)", r"set Length to \1 in the Import dialog"),
    (
        r"[Pp]ass --data-field NAME or a 0-based column number",
        "set “Data field” in the Import dialog to the column's name or 0-based number",
    ),
    (r"[Pp]ass --label-field NAME", "set “Label field” in the Import dialog"),
    (r"pass --labels LABELS\.csv", "choose a labels file in the Import dialog"),
    (r"pass --dtype", "choose a Dtype in the Import dialog"),
    (r"[Pp]ass --x-key/--y-key", "name the data and label arrays in the Import dialog"),
    (r"pass --format", "pick the file's format"),
    (r"use --split all", "choose all rows"),
    (r"give --val, --test or --folds", "set Validation, Test or k-fold on the Training page"),
    (r"--restart", "Start (a new run) instead of Resume"),
)


def fix_in_gui_words(text: str) -> str:
    """``text`` with each known CLI flag replaced by the GUI control that does the same."""
    for pattern, words in FLAG_WORDS:
        text = re.sub(pattern, words, text)
    return text


def explain(message: str) -> tuple[str, str]:
    """(what went wrong, what to do) for a one-line job message, the fix in GUI words.

    The catalogue's messages end with their fix after the last ``: ``/``. `` sentence; a
    message without one gets the general advice to read the log.
    """
    text = fix_in_gui_words(message.strip())
    for sep in (". ", "; "):
        head, found, tail = text.rpartition(sep)
        if (
            found
            and head
            and re.match(
                r"^(fix|pass|check|free|use|give|choose|pick|set|"
                r"press|tick|name|rerun|re-run|remove|update|open|"
                r"convert|restore|try|start)\b",
                tail,
                re.IGNORECASE,
            )
        ):
            return head.rstrip(".") + ".", tail[0].upper() + tail[1:].rstrip(".") + "."
    return text, "Open the log for the details; Resume continues a stopped or failed job."
