"""Dialogs that start jobs or inform: generate, import (with its preview), about."""
