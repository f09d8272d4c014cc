"""Lineare's engine: the linear-attention family in three equivalent forms, and token-by-token records.

Knows nothing of the app. Entry points: `engine.ops.forward` (whole sequences) and
`engine.stepping` (one token at a time, with records).
"""
from lineare.engine.device import get_device

__all__ = ["get_device"]
