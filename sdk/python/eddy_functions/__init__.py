"""Eddy's function runtime for Python: write a module with `handler(ctx, event)` (and
optionally `init(ctx)`), run it with `python -m eddy_functions module.py` (or the
`eddy-function` script), and point a pipeline's function at it, or give the same line as
the function's `command:` and Eddy runs it.

- `init(ctx)` runs once per instance, before the first event; keep clients and models in
  `ctx.state`.
- `handler(ctx, event)` gets a `cloudevents.http.CloudEvent`. A plain function runs in a
  thread pool of `num_workers` threads (`--workers`, `NUM_WORKERS`, default 4); an
  `async def` runs on the event loop.
- Its return value is the reply, the next event of the pipeline: `None` (empty), `bytes`,
  `str`, anything JSON can hold, a `CloudEvent`, or `reply(data, **labels)` to set labels
  (extension attributes that links select on).
- Raising fails the event: the answer is a 500 whose body is the exception's message and
  traceback, which Eddy retries and at last puts, base64-encoded, in the dead-letter
  record's `ce_knativeerrordata`.
- Batches (`application/cloudevents-batch+json`) are handled: the handler runs once per
  event and the answer is the list of replies, in order.

The server is uvicorn over a Starlette app: `GET /health` answers 200 once `init` is
done, `POST /` takes events.
"""

from .runtime import Context, Reply, app_for, reply

__all__ = ["Context", "Reply", "app_for", "reply"]
