"""Applying a placement to a TF model: validation, the device function, running and verifying.

The public entry points of placer.apply.devices are re-exported here, so
`from placer import apply; apply.device_fn(p)` works in user scripts.
"""

from placer.apply.devices import (
    DeviceFunction,
    apply_to_graph_def,
    device_fn,
    follow_resources,
    op_devices,
    parse_device_map,
    remap,
    unplaced,
    validate,
)

__all__ = [
    "DeviceFunction",
    "apply_to_graph_def",
    "device_fn",
    "follow_resources",
    "op_devices",
    "parse_device_map",
    "remap",
    "unplaced",
    "validate",
]
