"""A function on Eddy's Python runtime (eddy_functions): records each event it gets in
$OUT, fails for payloads holding "boom" (the error message is what the dead-letter record
carries), replies with a label."""

import json
import os

from eddy_functions import reply


def init(ctx):
    ctx.state["out"] = open(os.environ["OUT"], "a", buffering=1)
    ctx.logger.warning("index function ready")


def handler(ctx, event):
    data = event.data
    if isinstance(data, bytes):
        data = data.decode()
    ctx.state["out"].write(json.dumps({"id": event["id"], "data": data,
                                       "partitionkey": event.get("partitionkey")}) + "\n")
    if "boom" in str(data):
        raise ValueError(f"no index for {data}")
    return reply({"indexed": event["id"]}, kind="image")
