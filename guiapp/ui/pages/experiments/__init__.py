"""The Experiments page: trials of k-fold runs, scaling curves and sweeps."""
