"""Development aids, not part of the app's pages: screenshots of every page."""
