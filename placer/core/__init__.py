"""The bottom layer, shared by every other part and free of TensorFlow.

OpGraph and its JSON io, co-location grouping and features, Cluster,
Placement, Measurement (and the Measurer protocol), errors and atomic writes.
It imports only the standard library, numpy, scipy and networkx, so
baselines, the simulator and the SLAQ allocator load in milliseconds.
"""
