"""Runnable examples: ``python -m wbsim.examples.<name> --help``."""
