"""Augmentation: one registry of ops (``registry.py``: parameters, defaults, ranges, and where
each op runs). Offline ops (``offline.py``, checked by ``check.py``) write augmented copies
into a dataset; online ops (``online.py``) run per batch inside the reader while training."""
