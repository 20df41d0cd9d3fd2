"""Verification at scale: a queue of requests, and the two ways to drain it.

``queue`` holds the requests and their leases, ``worker`` verifies claimed requests on
this machine, ``dispatch`` hands each to a jobs service as a server job and a harness job.
"""
