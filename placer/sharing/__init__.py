"""Many placement searches sharing one pool of measurement slots: SLAQ and fair allocators,
curve fitting, the search runner (on placer.measure's engines), reports."""
