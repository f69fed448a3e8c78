"""Loading ml_collections config files outside of flag parsing (demo, bench, jobs files)."""

from __future__ import annotations

import importlib.util
import os

from placer.core.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def resolve(path: str) -> str:
    """A config path as given when it exists, else the installed one of that relative name.

    The README's commands name configs as `configs/nmt.py`; run from another
    folder, that relative path names the toolkit's own copy.

    >>> resolve("configs/nmt.py") == os.path.join(ROOT, "configs/nmt.py") or os.path.exists("configs/nmt.py")
    True
    """
    if not os.path.exists(path) and not os.path.isabs(path) and os.path.exists(os.path.join(ROOT, path)):
        return os.path.join(ROOT, path)
    return path


def resolve_spec(spec: str) -> str:
    """`resolve` applied to the path of a `path[:variant]` config spec."""
    path, colon, variant = spec.partition(":")
    return resolve(path) + colon + variant


def load_config(spec: str):
    """Loads `path[:variant]` the way `config_flags.DEFINE_config_file` does.

    Args:
      spec: a config file path, relative paths resolved against the current
        folder and then the project root, optionally followed by `:variant`
        (passed to `get_config`).

    Raises:
      InputError: a missing file or one without `get_config`.
    """
    path, _, variant = resolve_spec(spec).partition(":")
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
