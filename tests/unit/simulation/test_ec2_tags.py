"""moto's EC2 tags under the world's copy-on-write writes: a reader walking a resource's tags while another thread
tags it sees one whole set, never a dict that changes under it (moto's in-place writes made that a 500)."""

import pytest
from moto.ec2.exceptions import TagLimitExceeded
from moto.ec2.models.tags import TagBackend

from autoscaler_dev.world import ec2_tags


@pytest.fixture
def tags() -> TagBackend:
    ec2_tags.install()
    backend = TagBackend()
    backend.create_tags(["i-1"], {"Name": "one", "karpenter.sh/nodepool": "default"})
    return backend


def test_a_write_while_a_reader_walks_the_tags_leaves_the_reader_its_set(tags: TagBackend) -> None:
    walking = iter(tags.tags["i-1"].items())
    first = next(walking)
    tags.create_tags(["i-1"], {"karpenter.sh/nodeclaim": "default-abc"})  # in place, this broke the walk
    tags.delete_tag_keys(["i-1"], ["Name"])
    assert [first, *walking] == [("Name", "one"), ("karpenter.sh/nodepool", "default")]
    assert tags.tags["i-1"] == {"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "default-abc"}


def test_moto_s_own_rules_still_apply_and_a_refused_write_changes_nothing(tags: TagBackend) -> None:
    with pytest.raises(TagLimitExceeded):
        tags.create_tags(["i-1"], {f"k{n}": "v" for n in range(50)})
    assert tags.tags["i-1"] == {"Name": "one", "karpenter.sh/nodepool": "default"}
    tags.delete_tags(["i-1"], {"Name": "other"})  # a value that does not match is not deleted, as in EC2
    tags.delete_tags(["i-1"], {"karpenter.sh/nodepool": None})
    assert tags.tags["i-1"] == {"Name": "one"}
    assert tags.describe_tags({"resource-id": ["i-1"]})[0]["key"] == "Name"
