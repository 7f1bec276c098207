"""The Qt face of guiapp: main window, pages, dialogs and Qt models.

Everything Qt lives here; ``guiapp.core`` never imports Qt. The GUI process never
imports TensorFlow or Keras: long jobs run as child processes of the CLI.
"""
