"""A model source made into a training graph: import the function (or load the .keras file), call it, build the step.

Sources (models/registry.py): "module:function" (the built-ins), "FILE.py:FUNCTION"
or "FILE.keras". Everything a user's file can get wrong is an InputError
naming the file, the function and the problem.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import zipfile

import tensorflow as tf

from models.common import ModelGraph
from placer.core.errors import InputError, one_line


def _import_file(path: str, where: str):
    """Imports a Python file as a module of its own (named after its path, so two files never collide)."""
    if not os.path.isfile(path):
        raise InputError(f"{where}: no such file")
    name = "placer_model_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # the file may import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 (any failure of a user's file is bad input)
        raise InputError(f"{path}: cannot be imported: {one_line(e)}") from None
    finally:
        sys.path.remove(folder)
    return module


def function_of(source: str):
    """(callable, "FILE:FUNCTION") of a "module:function" or "FILE.py:FUNCTION" source.

    Raises:
      InputError: the file or module cannot be imported, or has no such function.
    """
    target, _, name = source.rpartition(":")
    where = f"{target}:{name}"
    if target.endswith(".py"):
        module = _import_file(target, where)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as e:
            raise InputError(f"{where}: cannot import module {target!r}: {one_line(e)}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        found = sorted(k for k, v in vars(module).items() if inspect.isfunction(v) and not k.startswith("_"))
        raise InputError(f"{where}: no function {name!r} in {target} (functions: {', '.join(found) or 'none'})")
    return fn, where


def _takes_config(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def build(source: str, config) -> ModelGraph:
    """The training graph of `source` under the model config `config` (fields batch_size, seed)."""
    if source.endswith(".keras"):
        return _from_keras_file(source, config)
    fn, where = function_of(source)
    if _takes_config(fn):  # a builder of the registry's kind: config -> ModelGraph
        if config.get("source"):  # --model names functions of no arguments
            raise InputError(
                f"{where}: takes arguments; --model needs a function of none that returns a compiled Keras model "
                "(the built-in models: --config=configs/MODEL.py)"
            )
        return fn(config)
    import models.keras_step as keras_step  # noqa: PLC0415 (TensorFlow: only when a model is built)

    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(int(config.get("seed", 1)))
        model = _call(fn, where)
        if isinstance(model, ModelGraph):
            return model
    import models.keras3_step as keras3_step  # noqa: PLC0415 (Keras 3: only when a model is built)

    if keras3_step.is_keras3(model):  # traced in a function of its own: Keras 3 does not build in graph mode
        import keras  # noqa: PLC0415

        keras.backend.clear_session()  # fresh layer names, so every process names the step's ops alike
        model = _call(fn, where)
        return keras3_step.traced_step(
            model, name=config.name, batch_size=_batch(config), seed=int(config.get("seed", 1)), where=where
        )
    with graph.as_default():
        keras_step.check_model(model, where)
        return keras_step.training_step(
            model, name=config.name, batch_size=_batch(config), seed=int(config.get("seed", 1)), where=where
        )


def _call(fn, where: str):
    try:
        return fn()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 (a user's function failing is bad input)
        raise InputError(f"{where}: raised {one_line(e)}") from None


def _batch(config) -> int:
    """Examples per step: the config's `batch_size` (models.registry.user_model_config always sets it)."""
    return int(config.batch_size)


def keras_version_of(path: str) -> str:
    """The Keras version a .keras file was saved with ("" when the file does not say)."""
    import json  # noqa: PLC0415

    try:
        with zipfile.ZipFile(path) as z:
            return str(json.loads(z.read("metadata.json")).get("keras_version", ""))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
        raise InputError(f"{path}: not a saved Keras model (.keras zip with metadata.json): {one_line(e)}") from None


def _compile_as_saved(model, path: str) -> None:
    """Compiles a loaded model with the optimizer and loss saved in its file (graph mode restores neither)."""
    import json  # noqa: PLC0415

    import tf_keras  # noqa: PLC0415

    import models.keras_step as keras_step  # noqa: PLC0415 (TensorFlow: only when a model is built)

    with zipfile.ZipFile(path) as z:
        saved = json.loads(z.read("config.json")).get("compile_config") or {}
    if not saved.get("optimizer") or not saved.get("loss"):
        raise InputError(f"{path}: the model was saved uncompiled (call model.compile(optimizer=..., loss=...) first)")

    def loss_of(value):
        if isinstance(value, dict) and "class_name" not in value:
            return {k: loss_of(v) for k, v in value.items()}
        if isinstance(value, list):
            return [loss_of(v) for v in value]
        return tf_keras.losses.get(value)

    model.compile(
        optimizer=keras_step.legacy_optimizer_from_config(saved["optimizer"], path),
        loss=loss_of(saved["loss"]),
        loss_weights=saved.get("loss_weights"),
    )


def _from_keras_file(path: str, config) -> ModelGraph:
    import tf_keras  # noqa: PLC0415

    import models.keras_step as keras_step  # noqa: PLC0415 (TensorFlow: only when a model is built)

    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    if keras_version_of(path).startswith("3"):
        import keras  # noqa: PLC0415

        import models.keras3_step as keras3_step  # noqa: PLC0415 (Keras 3: only when a model is built)

        keras.backend.clear_session()
        try:
            model = keras.saving.load_model(path)
        except Exception as e:  # noqa: BLE001 (a file Keras cannot load is bad input)
            raise InputError(f"{path}: cannot be loaded: {one_line(e)}") from None
        return keras3_step.traced_step(
            model, name=config.name, batch_size=_batch(config), seed=int(config.get("seed", 1)), where=path
        )
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(int(config.get("seed", 1)))
        try:
            model = tf_keras.models.load_model(path, compile=False)
            _compile_as_saved(model, path)
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 (a file tf_keras cannot load is bad input)
            raise InputError(f"{path}: cannot be loaded: {one_line(e)}") from None
        keras_step.check_model(model, path)
        return keras_step.training_step(
            model, name=config.name, batch_size=_batch(config), seed=int(config.get("seed", 1)), where=path
        )
