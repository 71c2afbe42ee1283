"""Where the tests find the Skype trace: churn_traces.skype_trace_path (the
file VINIFERA_SKYPE_TRACE names, else ../shared/traces beside the checkout).
Tests that need it skip without it."""

from vinifera.churn_traces import skype_trace_path

SKYPE_PATH = skype_trace_path()
