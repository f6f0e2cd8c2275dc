"""Developer tools that are not shipped: they compare this project with upstream Karpenter."""
