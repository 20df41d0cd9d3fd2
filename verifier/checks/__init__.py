"""Integrity and result checks: small units with stable ids, registered in ``registry``."""
