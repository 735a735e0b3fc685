"""`python -m orchestrator ...` is `benchctl ...` (for machines with the project on PYTHONPATH only)."""

from orchestrator.cli import main

main()
