"""The version, in one place below every layer (``ghostrun --version`` reads it too)."""

__version__ = "0.1.0"
