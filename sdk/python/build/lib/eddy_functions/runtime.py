"""The ASGI app around a user's handler: CloudEvents in (binary, structured or batch
mode), replies out, failures as 500 with the traceback."""

import asyncio
import inspect
import json
import logging
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from cloudevents.conversion import to_dict
from cloudevents.http import CloudEvent, from_dict, from_http, to_binary
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

BATCH = "application/cloudevents-batch+json"


@dataclass
class Context:
    """What `init` and every `handler` call get."""

    function: str
    env: dict
    logger: logging.Logger
    state: dict = field(default_factory=dict)


@dataclass
class Reply:
    """A reply with labels: extension attributes the pipeline's links select on."""

    data: object
    labels: dict


def reply(data, **labels) -> Reply:
    """The reply `data` with `labels` (lowercase letters and digits as names)."""
    return Reply(data, labels)


def _as_event(value, incoming: CloudEvent):
    """A handler's return value as (attributes, data bytes, content type)."""
    labels = {}
    if isinstance(value, Reply):
        labels, value = value.labels, value.data
    if isinstance(value, CloudEvent):
        headers, body = to_binary(value)
        attrs = {k[3:]: v for k, v in headers.items() if k.lower().startswith("ce-")}
        attrs.update(labels)
        return attrs, body or b"", headers.get("content-type")
    if value is None:
        return labels, b"", None
    if isinstance(value, bytes):
        return labels, value, "application/octet-stream"
    if isinstance(value, str):
        return labels, value.encode(), "text/plain; charset=utf-8"
    return labels, json.dumps(value).encode(), "application/json"


def _structured(attrs, body, content_type):
    """One reply of a batch as structured-mode JSON."""
    out = dict(attrs)
    if content_type:
        out["datacontenttype"] = content_type
    if content_type and "json" in content_type and body:
        out["data"] = json.loads(body)
    elif body:
        try:
            out["data"] = body.decode()
        except UnicodeDecodeError:
            import base64
            out["data_base64"] = base64.b64encode(body).decode()
    return out


def app_for(handler, init=None, workers=None, name="function"):
    """The ASGI app serving `handler` (and running `init` once at startup)."""
    workers = workers or int(os.environ.get("NUM_WORKERS", "4"))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="handler")
    ctx = Context(function=name, env=dict(os.environ), logger=logging.getLogger(name))
    ready = asyncio.Event()

    async def call(event):
        if inspect.iscoroutinefunction(handler):
            return await handler(ctx, event)
        return await asyncio.get_running_loop().run_in_executor(pool, handler, ctx, event)

    async def startup():
        if init is not None:
            if inspect.iscoroutinefunction(init):
                await init(ctx)
            else:
                await asyncio.get_running_loop().run_in_executor(pool, init, ctx)
        ready.set()

    async def health(_request: Request):
        if ready.is_set():
            return PlainTextResponse("ok")
        return PlainTextResponse("starting", status_code=503)

    async def events(request: Request):
        body = await request.body()
        headers = dict(request.headers)
        try:
            if headers.get("content-type", "").startswith(BATCH):
                items = json.loads(body)
                replies = []
                for item in items:
                    event = from_dict(item)
                    replies.append(_structured(*_as_event(await call(event), event)))
                return JSONResponse(replies)
            event = from_http(headers, body)
            attrs, data, content_type = _as_event(await call(event), event)
        except Exception as e:  # the handler failed: Eddy retries, then dead-letters
            text = f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}"
            ctx.logger.error("handler failed: %s", text)
            return PlainTextResponse(text, status_code=500)
        out = {f"ce-{k}": str(v) for k, v in attrs.items()}
        if content_type:
            out["content-type"] = content_type
        return Response(data, status_code=200, headers=out)

    return Starlette(routes=[Route("/health", health, methods=["GET"]),
                             Route("/", events, methods=["POST"])],
                     on_startup=[startup])
