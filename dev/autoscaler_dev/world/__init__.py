"""The embedded world for ``make demo``, ``autoscaler simulate`` and the functional tests: moto over HTTP
(``aws_world``), the Kubernetes API emulator, the stack's queues, rules and table (``stack``), and around them the
actors, kubelets, faults, invariants and observers of a scenario run on a virtual clock (``runner``).
``interruptions`` builds the EC2 and AWS Health events of the interruption queue and the SQS events Lambda delivers.
"""
