"""Applying a placement to a TF model: validation, the device function, running and verifying.

The public entry points of placer.apply.devices (its `__all__`) are
re-exported here, so `from placer import apply; apply.device_fn(p)` works in
user scripts.
"""

from placer.apply.devices import *  # noqa: F403
