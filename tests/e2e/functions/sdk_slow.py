"""A slow function on Eddy's runtime: each event takes half a second, and each instance
handles one at a time, so a busy link needs more instances."""

import os
import time


def handler(ctx, event):
    time.sleep(0.5)
    return {"pid": os.getpid()}
