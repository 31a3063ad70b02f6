"""Helpers shared by the examples: BLAS threads, option checking, progress and Ctrl-C.

A user's mistake on the command line ends in one ``prog: error: ...`` line on stderr and exit
code 2 (argparse's convention), never in a traceback; a long run reports its progress with a
tqdm bar when tqdm is installed and stdout is a terminal, else with plain lines; Ctrl-C during
training is turned into a flag that the training loop checks between steps, so the model and
optimizer are never caught halfway through an update.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import time
from typing import NoReturn


def limit_blas_threads(n: int):
    """Cap NumPy's BLAS thread pool at ``n`` for a ``with`` block.

    The examples' matrices are small; on a shared or small machine extra BLAS threads mostly
    spin and can make a step several times slower. threadpoolctl comes with scikit-learn (the
    ``examples`` extra); without it this is a no-op (set ``OPENBLAS_NUM_THREADS`` instead).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


# -- options ----------------------------------------------------------------------------------
def fail(prog: str, message: str) -> NoReturn:
    """A user's mistake: ``prog: error: <message>`` on one line of stderr, then exit code 2."""
    print(f"{prog}: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    raise SystemExit(2)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block above them)."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, f"{message} (see --help)")


def warn(prog: str, message: str) -> None:
    """``prog: warning: <message>`` on stderr."""
    print(f"{prog}: warning: {message}", file=sys.stderr, flush=True)


def integer(low: int, high: int | None = None):
    """An argparse ``type`` for integers in ``[low, high]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if value < low or (high is not None and value > high):
            rule = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {rule}; got {value}")
        return value
    return parse


def number(low: float, high: float = math.inf, *, low_open: bool = True,
           high_open: bool = False):
    """An argparse ``type`` for finite floats in the interval given (open or closed ends)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
        too_low = value <= low if low_open else value < low
        too_high = value >= high if high_open else value > high
        if not math.isfinite(value) or too_low or too_high:
            lo = f"{'>' if low_open else '>='} {low:g}"
            rule = lo if math.isinf(high) else f"{lo} and {'<' if high_open else '<='} {high:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number {rule}; got {text}")
        return value
    return parse


# -- progress ---------------------------------------------------------------------------------
def clock(seconds: float) -> str:
    """``75.4`` -> ``'1:15'``; hours when needed."""
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class Progress:
    """Training progress: a tqdm bar, plain lines, or (``quiet``) nothing but ``write``.

    The bar needs tqdm (the ``examples`` extra) and a terminal on stdout; otherwise a line
    ``step 40/400: loss 2.345, 12,000 tokens/s, 0:05 elapsed, about 0:45 left`` is printed at
    every tenth of the run, which reads well in a log file too.
    """

    def __init__(self, start: int, total: int | None, quiet: bool = False) -> None:
        self.start, self.total, self.t0 = start, total, time.perf_counter()
        self.bar = None if quiet else _tqdm_bar(None if total is None else total - start)
        self.lines = not quiet and self.bar is None

    def set_total(self, total: int) -> None:
        """The run's last step changed (a time budget re-sized)."""
        self.total = total
        if self.bar is not None:
            self.bar.total = total - self.start
            self.bar.refresh()

    def update(self, step: int, loss: float, tokens_per_s: float, line: bool = True) -> None:
        """Called after ``step`` steps are done; ``line=False`` skips a plain line due now."""
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens_per_s:.0f}", refresh=False)
            self.bar.update(1)
        elif self.lines and line and self._line_due(step):
            elapsed = time.perf_counter() - self.t0
            left = elapsed / (step - self.start) * (self.total - step)
            self.write(f"step {step}/{self.total}: loss {loss:.4f}, {tokens_per_s:,.0f} "
                       f"tokens/s, {clock(elapsed)} elapsed, about {clock(left)} left")

    def _line_due(self, step: int) -> bool:
        if self.total is None:  # a time budget not yet sized
            return False
        every = max(1, (self.total - self.start) // 10)
        return (step - self.start) % every == 0 or step == self.total

    def write(self, line: str) -> None:
        """A line of text above the bar (or between the progress lines)."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stdout)
        else:
            print(line, flush=True)

    def close(self) -> None:
        """Finish the bar, if any."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _tqdm_bar(total: int | None):
    if not sys.stdout.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="step", dynamic_ncols=True, file=sys.stdout)


# -- Ctrl-C -----------------------------------------------------------------------------------
class StopOnInterrupt:
    """``with StopOnInterrupt() as stop:`` the first Ctrl-C sets ``stop.requested``.

    The loop finishes its current step, saves and exits; a second Ctrl-C raises
    ``KeyboardInterrupt`` at once. Outside the block the previous handler is back.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> StopOnInterrupt:
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self._previous)
