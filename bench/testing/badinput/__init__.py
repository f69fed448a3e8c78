"""The bad-input corpus (cases.py), its files (inputs.py) and the runner that checks a case end to end."""
