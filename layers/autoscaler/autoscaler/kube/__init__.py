"""The Cluster port (``kube.port``, pure) and its adapters (the kubernetes-client one imports the client)."""
