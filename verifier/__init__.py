"""Organizer side: intake, rebuild, sandbox, harness (PPL, TPS), checks, verdict, report."""
