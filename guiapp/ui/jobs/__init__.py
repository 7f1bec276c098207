"""Background jobs of the GUI: a CLI child process (QProcess), the Jobs panel, tails of detached runs."""
