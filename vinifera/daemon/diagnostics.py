"""The daemon's own diagnostics (started, bad datagrams, left): structlog,
one JSON object per line on stderr. Node records (docs/logs.md) go to the
node log file instead; these are for operators."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info", stream=None) -> None:
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=True,
    )


def node_logger():
    """The node's diagnostics logger: as configured (the CLI: configure()),
    else structlog's defaults on stderr, not stdout: a program that embeds
    a node keeps its stdout for itself."""
    if structlog.is_configured():
        return structlog.get_logger("vinifera.node")
    return structlog.wrap_logger(structlog.PrintLogger(sys.stderr))
