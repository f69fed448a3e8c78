"""The learner: the placement problem, policies behind an encoder registry, REINFORCE."""
