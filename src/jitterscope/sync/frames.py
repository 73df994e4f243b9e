"""Frame marks from a Python program run under `jitterscope sync` (the C API is native/jitterscope_sync.h).

    from jitterscope.sync import frames
    for i, item in enumerate(work):
        frames.mark(i)          # a frame boundary: per-frame jitter and the frame-time distribution
        process(item)

Without the interposer (the program run on its own) `mark` does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache


@cache
def _marker() -> Callable[[int], None] | None:
    try:
        fn = ctypes.CDLL(None).jitterscope_sync_frame  # present only when libjssync.so is preloaded
    except (AttributeError, OSError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_uint64], None
    return fn


def mark(frame_id: int) -> None:
    """A frame boundary on the calling thread, numbered `frame_id`."""
    fn = _marker()
    if fn is not None:
        fn(frame_id)
