"""The in-cluster forwarder: watches pods, nodes and Karpenter's kinds and puts the changes that matter on
the EventBridge bus, while it holds the coordination.k8s.io Lease (``autoscaler forwarder --bus NAME``)."""
