"""`python -m vinifera.analysis ...` and `spark-submit .../vinifera/analysis/__main__.py ...`:
the same as `vinifera analyze ...`."""

from vinifera.cli.analyze import analyze

if __name__ == "__main__":
    analyze(prog_name="vinifera analyze")
