"""The ``autoscaler`` sub-commands that need the dev package; ``autoscaler.cli`` finds them by module name."""
