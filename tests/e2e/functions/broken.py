"""A function whose module fails at import: its instance exits before it is ready."""

import missing_module_for_the_broken_function  # noqa: F401


def handler(ctx, event):
    return None
