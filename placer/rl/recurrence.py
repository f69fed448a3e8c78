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


def _states(z_in: tf.Tensor, kernel: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Runs the recurrence: ([T, B..., K, H] outputs h, the same shape of cells c, [T, B..., K, 4H] gates z)."""
    h0 = tf.zeros(tf.concat([tf.shape(z_in)[1:-1], tf.shape(kernel)[-2:-1]], 0), z_in.dtype)

    def step(state, z_t):
        h, c, _ = state
        z = z_t + tf.matmul(h, kernel)
        i, f, g, o = tf.split(z, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c), c, z

    return tf.scan(step, z_in, initializer=(h0, h0, tf.zeros_like(z_in[0])))


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
    h, c, z = _states(z_in, kernel)

    def grad(dh):
        # Backpropagation through time for c_t = f c_t-1 + i g, h_t = o tanh(c_t):
        #   dc_t = dc from step t+1 (times f_t+1) + dh_t o_t (1 - tanh^2 c_t),
        #   dz_t = [dc_t g i(1-i), dc_t c_t-1 f(1-f), dc_t i (1-g^2), dh_t tanh(c_t) o(1-o)],
        #   dh_t-1 gets dz_t kernel^T. Only dh and dc run through the loop.
        i, f, g, o = tf.split(z, 4, axis=-1)
        i, f, g, o = tf.sigmoid(i), tf.sigmoid(f), tf.tanh(g), tf.sigmoid(o)
        tc = tf.tanh(c)
        into_c = o * (1.0 - tc * tc)
        local = tf.concat([g * i * (1.0 - i), _shift(c) * f * (1.0 - f), i * (1.0 - g * g), tc * o * (1.0 - o)], -1)
        back_kernel = tf.linalg.matrix_transpose(kernel)

        def back(carry, x):
            dh_later, dc_later, _ = carry  # dc_later: the cell gradient from step t+1, times f_t+1
            dh_t, into_c_t, local_t, f_t = x
            d = dh_t + dh_later
            dc = dc_later + d * into_c_t
            dz = tf.concat([dc, dc, dc, d], -1) * local_t
            return tf.matmul(dz, back_kernel), dc * f_t, dz

        zeros = tf.zeros_like(h[0])
        init = (zeros, zeros, tf.zeros_like(z[0]))
        _, _, dz = tf.scan(back, (dh, into_c, local, f), initializer=init, reverse=True)
        d_kernel = tf.einsum("t...kh,t...kz->...hz", _shift(h), dz)
        return dz, tf.reshape(d_kernel, tf.shape(kernel))

    return h, grad
