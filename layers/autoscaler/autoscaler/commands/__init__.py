"""Sub-commands of the ``autoscaler`` CLI, one module each."""
