"""Organizer side: intake, rebuild, sandbox, harness (PPL, TPS), integrity checks, verdict, report."""
