"""Serverless Karpenter: Karpenter v1's node lifecycle as event-driven AWS Lambda functions."""

__version__ = "0.1.0"
KARPENTER_VERSION = "v1.14.1"  # the Karpenter release whose API is served, unchanged
