"""Time limits: the backstop behind gradgen's size bounds (compile) and the guard on the
user's own function (check), which may loop for ever at a random point; and the tests'
hang detector.

Two clocks: `wall` (the default: seconds as the user waits them, SIGALRM) and `cpu` (the
processor time this process spends, SIGPROF), which a loaded machine does not stretch: a
limit on it catches a hang, not a slow moment, but never fires while the process waits
(on a pipe, a lock, `sleep`).
"""

from __future__ import annotations

import contextlib
import gc
import signal
import threading

CLOCKS = {"wall": ("ITIMER_REAL", "SIGALRM"), "cpu": ("ITIMER_PROF", "SIGPROF")}
RETRY_SECONDS = 0.05  # once expired, the error is raised again this often until the block is left


class _Limit:
    """One running limit: raises only while its block runs, never inside a garbage
    collection (whose callbacks and finalizers cannot raise: Python would print the error
    as unraisable and carry on) nor inside its own set-up and clean-up."""

    def __init__(self, error):
        self.error = error
        self.running = True
        self.collecting = False

    def expire(self, signum, frame):
        if not self.running or self.collecting:
            return  # the timer repeats: the next tick raises
        while frame is not None:
            if frame.f_code in _QUIET:
                return
            frame = frame.f_back
        raise self.error()

    def gc_start(self, phase, info):
        if phase == "start":
            self.collecting = True

    def gc_stop(self, phase, info):
        if phase == "stop":
            self.collecting = False


@contextlib.contextmanager
def time_limit(seconds, error, clock="wall"):
    """Raise `error()` inside whatever runs, after `seconds` of `clock` ("wall" or "cpu").

    The error is raised only while the guarded code runs, and again every RETRY_SECONDS
    while it still does (where it could not raise, or something swallowed it). The timer is
    cancelled before the block is left, so nothing fires after it.

    Signals serve only the main thread of a POSIX process, and one timer of a clock at a
    time: where it cannot serve, or an outer limit on the same clock is already running (it
    stays in charge), there is no limit here.
    """
    which, signum = (getattr(signal, name, None) for name in CLOCKS[clock])
    usable = (hasattr(signal, "setitimer") and which is not None and signum is not None
              and threading.current_thread() is threading.main_thread() and signal.getitimer(which)[0] == 0)
    if not usable:
        yield
        return

    limit = _Limit(error)
    gc.callbacks.insert(0, limit.gc_start)  # the first to know a collection starts
    gc.callbacks.append(limit.gc_stop)  # and the last to know it stopped
    previous = signal.signal(signum, limit.expire)
    signal.setitimer(which, seconds, RETRY_SECONDS)
    try:
        yield
    finally:
        limit.running = False  # a signal already on its way does nothing now
        signal.setitimer(which, 0)
        signal.signal(signum, previous)
        gc.callbacks.remove(limit.gc_start)
        gc.callbacks.remove(limit.gc_stop)


# frames in which the error must not be raised: this module's own set-up and clean-up
_QUIET = {time_limit.__wrapped__.__code__, contextlib._GeneratorContextManager.__enter__.__code__,
          contextlib._GeneratorContextManager.__exit__.__code__, _Limit.gc_start.__code__, _Limit.gc_stop.__code__}
