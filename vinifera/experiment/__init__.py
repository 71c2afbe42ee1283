"""The paper's evaluation as declared grids of independent simulations.

`figures.py` declares each figure's grid (systems x workloads x the figure's
parameter x seeds), `build.py` turns one point of it into a `SimConfig`
(with the paper's configuration or ours), `execute.py` runs one point and
returns its row, `runners.py` runs many points on local worker processes or
as Spark tasks, `store.py` keeps finished rows so that an interrupted sweep
resumes, and `table.py`, `plots.py`, `report.py` turn rows into the figure's
table, PNG and section of docs/evaluation.md. `vinifera experiment` (cli/)
drives it.
"""
