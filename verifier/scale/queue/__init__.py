"""The verification queue: one request file per submission, claimed with a lease.

``request`` holds the document and its pure state transitions; ``stores`` the local
folder and Hub dataset backends that apply them atomically.
"""
