"""`autoscaler crds --conversion-webhook URL`: CRDs that store v1, also serve v1beta1, and send conversions to
the webhook; the default output stays the committed one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from autoscaler.apis.conversion import SERVED_KINDS, convert
from autoscaler.apis.validation import parse
from autoscaler.cli import main
from autoscaler.crds.conversion import with_conversion
from autoscaler.crds.generate import CONVERTED_KINDS, crd_manifest
from autoscaler.manifests import load_documents
from tests.unit.apis.crd_eval import cel_failures, schema_failures
from tests.unit.test_crds import _walk

URL = "https://abcdefghij.lambda-url.us-west-2.on.aws/"
COMMITTED = Path(__file__).parents[2] / "infra" / "manifests" / "crds"
EXAMPLES = Path(__file__).parents[2] / "events" / "v1beta1"


def test_crds_with_a_conversion_webhook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--out", str(tmp_path), "--conversion-webhook", URL]) == 0
    assert "wrote" in capsys.readouterr().out
    converted = {f"{c.group}_{c.plural}.yaml" for c in CONVERTED_KINDS}
    assert converted == {
        "karpenter.sh_nodepools.yaml",
        "karpenter.sh_nodeclaims.yaml",
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
    }
    for path in sorted(tmp_path.iterdir()):
        if path.name not in converted:  # NodeOverlay and CapacityBuffer have one version: nothing to convert
            assert path.read_text() == (COMMITTED / path.name).read_text()
            continue
        spec = yaml.safe_load(path.read_text())["spec"]
        served = {v["name"]: (v["served"], v["storage"]) for v in spec["versions"]}
        assert served == {"v1": (True, True), "v1beta1": (True, False)}, path.name
        assert spec["conversion"] == {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": URL}},
        }
        v1 = next(v for v in spec["versions"] if v["name"] == "v1")
        committed = yaml.safe_load((COMMITTED / path.name).read_text())["spec"]["versions"][0]
        assert v1 == committed  # the v1 version is exactly the committed one


def test_the_v1beta1_schemas_are_structural() -> None:
    for crd in CONVERTED_KINDS:
        versions = with_conversion(crd_manifest(crd), crd, URL)["spec"]["versions"]
        schema = next(v for v in versions if v["name"] == "v1beta1")["schema"]["openAPIV3Schema"]
        for node in _walk(schema):
            assert "$ref" not in node and "title" not in node and "const" not in node
            assert {"type": "null"} not in node.get("anyOf", [])
            if "properties" in node:
                assert node["type"] == "object" and "additionalProperties" not in node


def test_the_default_output_is_the_committed_crds(tmp_path: Path) -> None:
    assert main(["crds", "--out", str(tmp_path)]) == 0
    for path in tmp_path.iterdir():
        assert path.read_text() == (COMMITTED / path.name).read_text()


@pytest.mark.parametrize(
    "url",
    ["http://insecure.example.com/", "https://host.example.com/?x=1", "https://host/#frag", "not a url", "https:///"],
)
def test_the_webhook_url_must_be_one_the_api_server_takes(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["crds", "--out", str(tmp_path), "--conversion-webhook", url]) == 2
    assert "conversion webhook URL" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


EXAMPLE_DOCUMENTS = load_documents([EXAMPLES])


@pytest.mark.parametrize("document", EXAMPLE_DOCUMENTS, ids=[d.origin.split("/")[-1] for d in EXAMPLE_DOCUMENTS])
def test_both_served_schemas_accept_both_forms_of_each_example(document: object) -> None:
    body = document.body  # type: ignore[attr-defined]
    kind = body["kind"]
    stored = parse(body, SERVED_KINDS).to_dict()
    assert cel_failures(kind, stored, version="v1beta1") == []
    assert schema_failures(kind, stored, version="v1beta1") == []
    v1 = convert(stored, stored["apiVersion"].split("/")[0] + "/v1")
    assert cel_failures(kind, v1) == []
    assert schema_failures(kind, v1) == []
