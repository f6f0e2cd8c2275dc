"""The embedded local world for ``make demo`` and the functional tests.

``kube_emulator`` serves a Kubernetes API over HTTP from memory; its siblings (``kube_*``) hold the pieces:
resource types and discovery, the object store with watches, patches, selectors, admission, evictions and
server-side tables. ``interruptions`` builds the EC2 and AWS Health events of the interruption queue and the
SQS events Lambda delivers. Nothing here is imported by the Lambda functions.
"""
