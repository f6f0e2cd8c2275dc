"""Karpenter's API, as pydantic models: the v1 API we serve and, later, v1beta1 for conversion.

Everything under ``autoscaler.apis`` is pure: no AWS SDK, no Kubernetes client, no Lambda runtime.
"""
