"""See what the model sees: likely label issues from out-of-sample predictions
(``label_issues.py``, numpy only) and per-row attribution (``attribution.py``, TensorFlow,
imported inside the functions that need it), each cached or written as plain files.

docs/EXPLAIN.md describes the commands (``guiapp labels``, ``guiapp explain``) and files.
"""
