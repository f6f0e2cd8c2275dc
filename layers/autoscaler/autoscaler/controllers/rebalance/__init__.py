"""Proactive replacement on EC2 rebalance recommendations (opt-in per NodePool): ``recommendation`` is the
hand-over the interruption function writes, ``replacement`` the provisioner's step. Importing the package loads
neither, so the interruption function does not load the provisioner's scheduler."""
