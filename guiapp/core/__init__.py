"""The Qt-free engine of guiapp: store, generation, pipeline, training, project files.

Nothing under ``guiapp.core`` imports Qt, and only the training jobs import TensorFlow.
"""
