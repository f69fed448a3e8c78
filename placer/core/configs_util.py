"""Loading ml_collections config files outside of flag parsing (demo, bench, jobs files)."""

from __future__ import annotations

import importlib.util
import os

from placer.core.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_config(spec: str):
    """Loads `path[:variant]` the way `config_flags.DEFINE_config_file` does.

    Args:
      spec: a config file path, relative paths resolved against the current
        folder and then the project root, optionally followed by `:variant`
        (passed to `get_config`).

    Raises:
      InputError: a missing file or one without `get_config`.
    """
    path, _, variant = spec.partition(":")
    if not os.path.exists(path) and os.path.exists(os.path.join(ROOT, path)):
        path = os.path.join(ROOT, path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such config file")
    module_spec = importlib.util.spec_from_file_location("placer_config_" + os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 (any error in a user's config file is bad input)
        raise InputError(f"{path}: cannot load config ({type(e).__name__}: {e})") from None
    if not hasattr(module, "get_config"):
        raise InputError(f"{path}: config file has no get_config()")
    return module.get_config(variant) if variant else module.get_config()
