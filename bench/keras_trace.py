"""Records real training curves of small Keras models as a SLAQ trace: bench/data/keras_trace.csv.

Each job trains one small model on this CPU, on data generated here (no
download): an MLP on a noisy two-class problem, a 1-D CNN on noisy
sinusoids of four frequencies, and an LSTM on sequences whose class is
the sign of their running sum. Jobs differ in learning rate, and some drop
it tenfold (a step decay) partway through, so the curves have regime
changes. An iteration is one optimizer step on a batch of BATCH, as in
SLAQ, where every update reports a loss; its loss is the cross-entropy on a
fixed held-out set, and the training set (PASS_STEPS batches) is reshuffled
after each pass.

Seconds per iteration on s workers (the trace's seconds_s columns), by
data-parallel splitting: each worker runs the step on BATCH / s examples
and the s gradients are averaged, so an iteration takes the measured seconds
of one training step on BATCH / s examples (the fastest of REPEATS) plus the
measured seconds to average s copies of the model's gradients in numpy. The
workers are taken to run side by side on devices of their own; with small
batches the per-step overhead dominates, so these jobs stop scaling after a
few workers, as real ones do.

About two to three minutes on 2 cores:

  .venv/bin/python -m bench.keras_trace
"""

from __future__ import annotations

import os
import time

import numpy as np

from bench import report
from bench.slaq_traces import TraceJob, save_trace

OUT = os.path.join(report.ROOT, "bench", "data", "keras_trace.csv")
BATCH = 512  # global batch, examples
PASS_STEPS = 4  # batches per pass over the training set
ITERATIONS = 240  # iterations (optimizer steps) per job
WORKERS = 8  # seconds recorded for 1..WORKERS workers
REPEATS = 9  # timed steps per batch size (the fastest counts: this machine is shared)


def make_data(kind: str, rng: np.random.Generator, n: int):
    """(x, y) of one generated task: "mlp" [n, 20], "cnn" [n, 64, 1], "lstm" [n, 24, 1]; y int labels."""
    if kind == "mlp":
        x = rng.standard_normal((n, 20)).astype("float32")
        w = np.linspace(-1.0, 1.0, 20)
        y = ((x @ w + 0.5 * np.sin(3 * x[:, 0]) + 0.5 * rng.standard_normal(n)) > 0).astype("int64")
        return x, y
    if kind == "cnn":
        y = rng.integers(0, 4, size=n)
        t = np.arange(64)[None, :]
        x = np.sin(2 * np.pi * (y[:, None] + 1) * t / 64 + rng.uniform(0, 6.3, (n, 1)))
        x = x + 0.8 * rng.standard_normal((n, 64))
        return x[..., None].astype("float32"), y.astype("int64")
    x = rng.standard_normal((n, 24, 1)).astype("float32")
    y = (np.cumsum(x[:, :, 0], axis=1)[:, -1] > 0).astype("int64")
    return x, y


def make_model(kind: str, tf):
    k = tf.keras.layers
    if kind == "mlp":
        layers = [k.Input((20,)), k.Dense(256, activation="relu"), k.Dense(256, activation="relu"), k.Dense(2)]
    elif kind == "cnn":
        layers = [
            k.Input((64, 1)),
            k.Conv1D(16, 5, activation="relu"),
            k.Conv1D(16, 5, activation="relu"),
            k.GlobalAveragePooling1D(),
            k.Dense(4),
        ]
    else:
        layers = [k.Input((24, 1)), k.LSTM(32), k.Dense(2)]
    return tf.keras.Sequential(layers)


def train_job(kind: str, lr: float, decay_at: int | None, seed: int, tf) -> tuple[np.ndarray, np.ndarray]:
    """[ITERATIONS + 1] held-out losses and [WORKERS] seconds per iteration on 1..WORKERS workers."""
    rng = np.random.default_rng(seed)
    tf.keras.utils.set_random_seed(seed)
    x, y = make_data(kind, rng, BATCH * PASS_STEPS)
    xv, yv = make_data(kind, rng, 256)
    model = make_model(kind, tf)
    opt = tf.keras.optimizers.SGD(learning_rate=lr, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(reduce_retracing=True)
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return grads

    def held_out() -> float:
        return float(loss_fn(yv, model(xv, training=False)))

    losses = [held_out()]
    for it in range(ITERATIONS):
        if decay_at is not None and it == decay_at:
            opt.learning_rate.assign(lr / 10)
        if it % PASS_STEPS == 0:
            order = rng.permutation(x.shape[0])
        b = it % PASS_STEPS
        idx = order[b * BATCH : (b + 1) * BATCH]
        step(x[idx], y[idx])
        losses.append(held_out())
    return np.array(losses), seconds_per_workers(step, model, x, y)


def seconds_per_workers(step, model, x, y) -> np.ndarray:
    """[WORKERS] measured seconds of one iteration on 1..WORKERS workers (see the module docstring)."""
    sizes = [w.numpy() for w in model.trainable_variables]
    out = []
    for s in range(1, WORKERS + 1):
        n = max(1, BATCH // s)
        step(x[:n], y[:n])  # traces this batch size
        t_step = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            step(x[:n], y[:n])
            t_step.append(time.perf_counter() - t)
        copies = [[g.copy() for g in sizes] for _ in range(s)]
        t = time.perf_counter()
        for _ in range(REPEATS):
            [np.mean([c[i] for c in copies], axis=0) for i in range(len(sizes))]
        t_avg = (time.perf_counter() - t) / REPEATS if s > 1 else 0.0
        out.append(float(np.min(t_step)) + t_avg)
    return np.array(out)


JOBS = [  # (model, learning rate, iteration of a tenfold learning-rate drop or None)
    ("mlp", 0.01, None),
    ("mlp", 0.05, 80),
    ("mlp", 0.002, None),
    ("mlp", 0.02, 120),
    ("cnn", 0.05, None),
    ("cnn", 0.2, 100),
    ("cnn", 0.01, None),
    ("cnn", 0.1, 60),
    ("lstm", 0.02, None),
    ("lstm", 0.1, 100),
    ("lstm", 0.005, None),
    ("lstm", 0.05, 140),
]


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # noqa: PLC0415

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    started = time.time()
    jobs = []
    for i, (kind, lr, decay_at) in enumerate(JOBS):
        losses, secs = train_job(kind, lr, decay_at, seed=i, tf=tf)
        name = f"{kind}-lr{lr:g}" + (f"-drop{decay_at}" if decay_at is not None else "")
        jobs.append(TraceJob(name, 0.0, losses, np.tile(secs, (losses.size, 1))))
        print(f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, s/iter " + " ".join(f"{v:.3f}" for v in secs))
    save_trace(OUT, jobs)
    print(f"wrote {OUT} ({len(jobs)} jobs) in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
