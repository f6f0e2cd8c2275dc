from tests.support.aws_fixtures import aws_world

__all__ = ["aws_world"]
