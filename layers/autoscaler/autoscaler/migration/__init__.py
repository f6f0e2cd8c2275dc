"""Moving from Karpenter v1beta1 (or v1) to this project: what ``autoscaler convert`` warns about and what
``autoscaler migrate-check`` checks. Pure: it reads parsed manifests, policies and values, changes nothing."""
