"""The OpenAPI document and the Gemini manifest, checked by independent validators."""

import jsonschema
from openapi_spec_validator import validate


def test_openapi_document_is_valid_openapi_3_1(demo):
    r = demo.get("/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_gemini_declarations_carry_json_schemas(demo):
    r = demo.get("/v1/tools", params={"format": "gemini"})
    declarations = r.json()["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations][0] == "search_flights"
    for d in declarations:
        assert set(d) == {"name", "description", "parametersJsonSchema"}
        jsonschema.Draft202012Validator.check_schema(d["parametersJsonSchema"])


def test_guidance_covers_unavailable_and_stale(demo):
    text = demo.get("/v1/prompts/agent-guidance").json()["guidance"]
    for phrase in ["unavailable", "retry_after_s", "stale", "how old"]:
        assert phrase in text, phrase
