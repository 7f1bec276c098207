"""Widgets shared by several pages: tables, form fields, thumbnails, the virtual sample grid."""
