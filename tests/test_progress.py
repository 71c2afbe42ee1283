"""Progress of long runs without a terminal: silent while short, then a line
now and then with the rounds done, the rate and what is left."""

import io

from vinifera.cli.progress import EVERY, FIRST, RoundProgress


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_lines_come_at_a_low_rate_with_rate_and_estimate():
    clock, out = Clock(), io.StringIO()
    p = RoundProgress(100, clock=clock, out=out, tty=False)
    clock.t += FIRST - 1
    p.update(5)
    assert out.getvalue() == ""  # a short run prints nothing
    clock.t += 1  # FIRST seconds in, 10 rounds done: 1 round/s, 90 s left
    p.update(10)
    assert out.getvalue() == "simulating: 10/100 rounds, 1.00 rounds/s, about 90 s left\n"
    clock.t += EVERY - 1
    p.update(20)
    assert out.getvalue().count("\n") == 1  # not before EVERY more seconds
    clock.t += 1  # 40 s, 40 rounds: 60 s left
    p.update(40)
    assert out.getvalue().splitlines()[-1] == (
        "simulating: 40/100 rounds, 1.00 rounds/s, about 60 s left"
    )
    clock.t += 1000
    p.update(100)  # the end is not announced: the summary follows
    p.close()
    assert out.getvalue().count("\n") == 2


def test_long_estimates_read_in_minutes_and_hours():
    clock, out = Clock(), io.StringIO()
    p = RoundProgress(10_000, clock=clock, out=out, tty=False)
    clock.t += 100
    p.update(10)  # 0.1 round/s: 99,900 s left
    assert out.getvalue().endswith("about 27.8 h left\n")


def test_a_terminal_gets_a_bar():
    out = io.StringIO()
    p = RoundProgress(10, out=out, tty=True)
    p.update(5)
    p.close()
    assert "simulating" in out.getvalue()
