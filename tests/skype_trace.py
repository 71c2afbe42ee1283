"""Where the tests find the Skype trace: the file VINIFERA_SKYPE_TRACE
names, else ../shared/traces beside the checkout. Tests that need it skip
without it."""

import os
from pathlib import Path

SKYPE_PATH = Path(
    os.environ.get("VINIFERA_SKYPE_TRACE")
    or Path(__file__).resolve().parents[2] / "shared" / "traces" / "skype-superpeers.avt"
)
