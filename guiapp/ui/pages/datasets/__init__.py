"""The Datasets page: the project's datasets, generate, import, check."""
