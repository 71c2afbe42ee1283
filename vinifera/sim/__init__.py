"""The simulator driver: virtual time, a network model, churn and workloads."""
