"""`python -m eddy_functions FILE.py [--workers N] [--port P]`: serves the file's
`handler` (and runs its `init`) on $PORT (default 8080)."""

import argparse
import importlib.util
import logging
import os
import sys
from pathlib import Path

import uvicorn

from .runtime import app_for


def main(argv=None):
    p = argparse.ArgumentParser(prog="eddy-function", description=__doc__)
    p.add_argument("file", help="a Python file defining handler(ctx, event) and maybe init(ctx)")
    p.add_argument("--workers", type=int, default=None, help="handler threads (NUM_WORKERS, 4)")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    p.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    args = p.parse_args(argv)
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "info").upper(), stream=sys.stderr)
    path = Path(args.file).resolve()
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    # An import error exits with its traceback on stderr: Eddy shows it as the reason.
    spec.loader.exec_module(module)
    handler = getattr(module, "handler", None)
    if handler is None:
        sys.exit(f"{path} defines no handler(ctx, event)")
    app = app_for(handler, getattr(module, "init", None), args.workers, path.stem)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
