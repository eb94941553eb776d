"""Wall-clock limits: the backstop behind gradgen's size bounds (compile) and the guard
on the user's own function (check), which may loop for ever at a random point."""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def time_limit(seconds, error):
    """Raise `error()` inside whatever runs, after `seconds`.

    SIGALRM serves only the main thread of a POSIX process, and one timer at a time: where
    it cannot serve, or an outer limit is already running (it stays in charge), there is
    no limit here.
    """
    usable = (hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_REAL)[0] == 0)
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise error()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
