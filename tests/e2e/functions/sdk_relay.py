"""A function on Eddy's runtime that passes each event's subject on."""


def handler(ctx, event):
    return {"key": event.get("subject")}
