"""conv: filled in by its owner; the package star-imports this module."""

__all__: list[str] = []
