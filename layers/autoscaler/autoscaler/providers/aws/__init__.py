"""The AWS cloud provider: EC2, SSM, EKS, IAM, Pricing and DynamoDB behind the CloudProvider port.

Only this package imports boto3/botocore, and only its adapter modules do: ``families``, ``userdata``,
``instancetype``, ``selection``, ``fleetrequest``, ``launchconfig``, ``drift``, ``nodeclaims``,
``ec2instance`` and ``cache`` are pure and tested without network. Import the adapters from their modules
(``providers.aws.provider.AWSCloudProvider``) so that the pure parts stay cheap to import.
"""
