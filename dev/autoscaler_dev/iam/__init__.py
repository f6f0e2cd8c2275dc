"""IAM for the embedded world: the policy evaluator, the stack's roles as synthesized, and what each AWS call asks
of IAM (``docs/security.md``, "IAM in the embedded world")."""
