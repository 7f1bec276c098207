"""Augmentation: one registry of ops (registry.py); offline ops write augmented copies into a dataset, online ops run per batch inside the reader."""
