"""The ghostrun pytest plugin (being written)."""
