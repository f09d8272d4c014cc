"""The hosted mode (scripts/host): nginx in front of several Lineare servers."""
