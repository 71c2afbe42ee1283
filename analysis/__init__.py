"""PySpark analysis of node logs (docs/analysis.md)."""
