"""The pipelines demo's function, on Eddy's Python runtime (sdk/python): each event is
an uploaded image; the reply names its thumbnail, and an image it cannot handle fails."""


def handler(ctx, event):
    key = event["subject"]
    if "broken" in key:
        raise ValueError(f"{key} is not an image")
    return {"thumbnail": key.replace("incoming/", "thumbs/")}
