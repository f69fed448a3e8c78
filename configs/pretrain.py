"""Pretraining config: `--config=configs/pretrain.py[:VARIANT]` for placer-pretrain.

Variants: "" = the model variants and generated layered graphs on
three clusters (hours on a 2-core machine); "small" = generated layered graphs only
on k80x2 and k80x4 (minutes), as bench/transfer.py and the tests use.

Graph specs: "gen:FAMILY:OPS:SEED" (placer.core.generated), a model config
"configs/MODEL.py:VARIANT", or a graph JSON file. The held-out list is
recorded with the policy and never trained on.
"""

import ml_collections

from configs import common


def get_config(variant: str = "") -> ml_collections.ConfigDict:
    """Returns the pretraining config for `variant` (see the module docstring)."""
    if variant not in ("", "small"):
        raise ValueError(f"unknown variant {variant!r} (valid: '', small)")
    config = common.attach(ml_collections.ConfigDict())
    config.placer.policy.encoder = "gnn"
    p = config.pretrain = ml_collections.ConfigDict()
    if variant == "small":
        p.graphs = ",".join(f"gen:layered:{n}:{s}" for n in (30, 60) for s in range(4))
        # An unseen seed of the trained family, and two families never trained on.
        p.held_out = "gen:layered:60:100,gen:chain:60:100,gen:fanin:60:100"
        p.clusters = "k80x2,k80x4"
    else:
        models = [
            "configs/rnnlm.py:layers=2",
            "configs/nmt.py:layers=2",
            "configs/nmt.py:layers=4",
            "configs/inception_v3.py:batch=32",
        ]
        # Generated graphs of one family only, so that two families stay unseen.
        gen = [f"gen:layered:{n}:{s}" for n in (40, 80) for s in range(6)]
        p.graphs = ",".join(models + gen)
        # The held-out set: NMT 8 layers, RNNLM 4 layers, Inception-V3 at another batch size,
        # and the fanin and chain families (never trained on).
        p.held_out = ",".join(
            [
                "configs/nmt.py:layers=8",
                "configs/rnnlm.py:layers=4",
                "configs/inception_v3.py:batch=64",
                "gen:fanin:200:100",
                "gen:fanin:400:101",
                "gen:chain:200:100",
            ]
        )
        p.clusters = "k80x2,k80x4,h100x8"
    p.samples_per_step = 16  # placements measured per step (our choice, as placer-train)
    p.learning_rate = 0.001  # Adam (our choice: 0.003 and 0.01 collapsed onto one device within 50 steps)
    p.clip_norm = 1.0  # gradient-norm clipping (TF hierarchical placer)
    p.entropy_weight = 0.02  # entropy bonus per placed group, decayed linearly to 0 (our choice)
    p.entropy_decay_steps = 1000  # steps of that decay
    p.failing_step_time = 100.0  # seconds charged to a failed sample (TF hierarchical placer)
    p.checkpoint_every = 100  # steps between checkpoints
    return config
