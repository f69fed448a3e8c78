"""The LSTM recurrence of the policy's encoder and decoder, with a hand-written gradient.

The recurrence is the Keras LSTM's (gate order i, f, g, o; sigmoid gates,
tanh cell input and output), taken from precomputed input gates: what the
input contributes (input times kernel, plus bias) does not depend on the
state, so callers compute it for all steps at once, and only the state's
product with the recurrent kernel stays inside the loop.

Why a hand-written gradient: differentiating a `tf.scan` makes TensorFlow
stack every intermediate of every step and replay each op's gradient inside
a second loop (a broadcast-shape reduction for every multiply, the recurrent
kernel's gradient one step at a time). Here the backward loop carries only
the state gradients, everything that does not depend on them is computed
for all steps at once before the loop, and the recurrent kernel's gradient
is one matrix product after it (Hochreiter and Schmidhuber 1997 for the
cell; the same algebra as the fused LSTM kernels of cuDNN). The values are
the same up to the order of floating-point sums.

Shapes: T steps, B... batch dimensions of LSTMs side by side (the encoder
stacks its two directions there), K sequences, H units; gates are [..., 4H].
"""

from __future__ import annotations

import tensorflow as tf

# Steps per loop iteration: the loop's own bookkeeping (about as costly as the small products of an encoder
# step) is paid once per UNROLL steps. The sequence is padded with zero gates to a multiple of it; padded steps
# come after the real ones, so they change no output, and their gradients are zero.
UNROLL = 8


def _chunked(x: tf.Tensor) -> tf.Tensor:
    """[T, ...] -> [ceil(T / UNROLL), UNROLL, ...], zeros after the last step."""
    pad = -tf.shape(x)[0] % UNROLL
    x = tf.concat([x, tf.zeros(tf.concat([[pad], tf.shape(x)[1:]], 0), x.dtype)], 0)
    return tf.reshape(x, tf.concat([[-1, UNROLL], tf.shape(x)[1:]], 0))


def _unchunked(x: tf.Tensor, steps: tf.Tensor) -> tf.Tensor:
    """The inverse of `_chunked`: [T, ...] without the padding."""
    return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], 0))[:steps]


def _states(z_in: tf.Tensor, kernel: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Runs the recurrence: ([T, B..., K, H] cells c, [T, B..., K, 4H] gates z); the outputs follow from both."""
    h0 = tf.zeros(tf.concat([tf.shape(z_in)[1:-1], tf.shape(kernel)[-2:-1]], 0), z_in.dtype)
    chunks = _chunked(z_in)

    def step(state, z_chunk):
        h, c, _, _ = state
        cs, zs = [], []
        for z_t in tf.unstack(z_chunk, UNROLL):
            z = z_t + tf.matmul(h, kernel)
            i, f, g, o = tf.split(z, 4, axis=-1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
            cs.append(c)
            zs.append(z)
        return h, c, tf.stack(cs), tf.stack(zs)

    init = (h0, h0, tf.zeros(tf.concat([[UNROLL], tf.shape(h0)], 0)), tf.zeros_like(chunks[0]))
    _, _, cs, zs = tf.scan(step, chunks, initializer=init)
    steps = tf.shape(z_in)[0]
    return _unchunked(cs, steps), _unchunked(zs, steps)


def _shift(x: tf.Tensor) -> tf.Tensor:
    """x one step later along axis 0, zeros first: [x_-1 = 0, x_0, ..., x_T-2]."""
    return tf.concat([tf.zeros_like(x[:1]), x[:-1]], 0)


@tf.custom_gradient
def lstm(z_in: tf.Tensor, kernel: tf.Tensor):
    """LSTM outputs from zero initial states.

    Args:
      z_in: [T, B..., K, 4H] float32 input gates per step (input times kernel plus bias)
        of K sequences, in any batch dimensions B... (none, or several LSTMs side by side).
      kernel: [B..., H, 4H] float32 recurrent kernel (one per LSTM of B...).

    Returns:
      [T, B..., K, H] the output h of every step; differentiable in both arguments.
    """
    c, z = _states(z_in, kernel)
    i, f, g, o = tf.split(z, 4, axis=-1)
    o, tc = tf.sigmoid(o), tf.tanh(c)
    h = o * tc  # the loop's outputs, the same ops on all steps at once

    def grad(dh):
        # Backpropagation through time for c_t = f c_t-1 + i g, h_t = o tanh(c_t):
        #   dc_t = dc from step t+1 (times f_t+1) + dh_t o_t (1 - tanh^2 c_t),
        #   dz_t = [dc_t g i(1-i), dc_t c_t-1 f(1-f), dc_t i (1-g^2), dh_t tanh(c_t) o(1-o)],
        #   dh_t-1 gets dz_t kernel^T. Only dh and dc run through the loop.
        si, sf, tg = tf.sigmoid(i), tf.sigmoid(f), tf.tanh(g)
        into_c = o * (1.0 - tc * tc)
        local = tf.concat(
            [tg * si * (1.0 - si), _shift(c) * sf * (1.0 - sf), si * (1.0 - tg * tg), tc * o * (1.0 - o)], -1
        )
        back_kernel = tf.linalg.matrix_transpose(kernel)

        def back(carry, chunk):
            dh_later, dc_later, _ = carry  # dc_later: the cell gradient from step t+1, times f_t+1
            dzs = []
            for dh_t, into_c_t, local_t, f_t in reversed(
                list(zip(*[tf.unstack(x, UNROLL) for x in chunk], strict=True))
            ):
                d = dh_t + dh_later
                dc = dc_later + d * into_c_t
                dz = tf.concat([dc, dc, dc, d], -1) * local_t
                dh_later, dc_later = tf.matmul(dz, back_kernel), dc * f_t
                dzs.append(dz)
            return dh_later, dc_later, tf.stack(dzs[::-1])

        chunks = tuple(_chunked(x) for x in (dh, into_c, local, sf))
        zeros = tf.zeros_like(h[0])
        _, _, dz = tf.scan(back, chunks, initializer=(zeros, zeros, tf.zeros_like(chunks[2][0])), reverse=True)
        dz = _unchunked(dz, tf.shape(z)[0])
        d_kernel = tf.einsum("t...kh,t...kz->...hz", _shift(h), dz)
        return dz, tf.reshape(d_kernel, tf.shape(kernel))

    return h, grad
