"""Demo workload of `placer-search`: five small placement searches sharing one pool.

The tiny RNNLM, NMT and Inception-V3 graphs on the paper's machine (k80x4),
plus two variants of the NMT search with other placer hyperparameters, arriving
a few seconds apart (SLAQ's setting: jobs arrive while others run). Runs in a
couple of minutes on a laptop CPU:

  placer-search --jobs=configs/searches/demo.py --slots=4 --epoch_s=2 \
      --policy=both --workdir=/tmp/search-demo

Fields per job are documented in docs/formats.md ("Jobs file").
"""

import ml_collections


def _job(name, config, arrival_s, **fields):
    job = ml_collections.ConfigDict()
    job.name = name
    job.config = config
    job.cluster = "k80x4"
    job.arrival_s = float(arrival_s)
    job.steps = 40  # REINFORCE iterations per search (our choice: enough to see curves flatten)
    job.seed = 0
    job.method = "seq2seq"  # the paper's RL search, whose settings the fields below are
    job.max_slots = 4  # the paper's samples per step (TF hierarchical placer)
    job.hidden_size = 64  # small policy: the demo runs on a CPU (paper: 512)
    for key, value in fields.items():
        job[key] = value
    return job


def _session_config() -> ml_collections.ConfigDict:
    """The tiny RNNLM and NMT searches, measured in real sessions on 2 logical CPUs per slot."""
    c = ml_collections.ConfigDict()
    c.jobs = [
        _job("rnnlm", "configs/rnnlm.py:tiny", 0, cluster="local:2", steps=4, max_slots=2),
        _job("nmt", "configs/nmt.py:tiny", 0, cluster="local:2", steps=4, max_slots=2),
    ]
    c.measure_seconds = 0.0  # a real session run takes its own time
    c.measure_timeout_s = 120.0  # seconds per placement: covers a fresh slot importing TF and building the graph
    c.max_retries = 2  # re-measurements of a dead worker's placements
    c.session_warmup = 1  # untimed steps per placement (our choice: the tiny graphs warm up in one)
    c.session_steps = 3  # timed steps per placement; the median is the step time
    return c


def get_config(variant: str = "") -> ml_collections.ConfigDict:
    """Returns the demo jobs.

    Variants: "short" runs 10 iterations per search; "session" is two short
    searches to run with `--measure=session` (cluster "local:2": each slot
    splits its machine's CPU into 2 logical devices and runs the placed
    graphs in TF sessions), e.g.

      placer-search --jobs=configs/searches/demo.py:session --slots=2 --engine=ray \
          --measure=session --epoch_s=2 --workdir=/tmp/search-session
    """
    if variant == "session":
        return _session_config()
    c = ml_collections.ConfigDict()
    c.jobs = [
        _job("rnnlm", "configs/rnnlm.py:tiny", 0),
        _job("nmt", "configs/nmt.py:tiny", 0),
        _job("inception", "configs/inception_v3.py:tiny", 3),
        _job("nmt-lr0.02", "configs/nmt.py:tiny", 6, learning_rate=0.02),
        _job("nmt-h128", "configs/nmt.py:tiny", 9, hidden_size=128, seed=1),
    ]
    if variant == "short":
        for job in c.jobs:
            job.steps = 10
    c.measure_seconds = 0.02  # seconds a slot is held per placement, emulating a device run (our choice)
    c.measure_timeout_s = 60.0  # seconds per placement before a worker counts as hung
    c.max_retries = 1  # re-measurements of a dead worker's placements
    return c
