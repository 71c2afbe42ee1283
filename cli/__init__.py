"""Command-line interface (installed as vinifera.cli)."""
