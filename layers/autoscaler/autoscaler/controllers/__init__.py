"""Controllers: the decisions of each function, talking to Kubernetes and the cloud only through ports."""
