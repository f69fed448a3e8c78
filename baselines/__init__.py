"""Baseline placers (no TensorFlow): single device, TF default, Scotch, MinCut,
METIS, human expert, and Baechi's m-TOPO, m-ETF and m-SCT.

Use `baselines.registry.get(name)(graph, cluster, seed=..., **options)`.
"""
