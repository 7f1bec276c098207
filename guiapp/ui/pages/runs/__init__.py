"""The Runs page: finished and running runs, their curves, confusion matrix and report."""
