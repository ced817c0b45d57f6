"""A checker for OpenAI strict-mode function schemas, written from the documented rules
(OpenAI structured-outputs guide, "Supported schemas"; see shared reference agent-protocols.md 2.3):

- the root is an object, not anyOf;
- every object has additionalProperties: false and lists every property in required;
- supported types: string, number, boolean, integer, object, array, null (as a union), enum, anyOf;
- supported keywords: string pattern/format, number multipleOf/maximum/exclusiveMaximum/minimum/
  exclusiveMinimum, array minItems/maxItems, plus $defs/$ref, description, const, enum;
- format only date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid;
- not supported: allOf, not, if/then/else, dependentRequired, dependentSchemas, oneOf,
  patternProperties and every other keyword;
- at most 5000 object properties and 10 levels of nesting; at most 1000 enum values;
- total length of property names, enum values and const values at most 120000 characters;
- an enum of a nullable type must list null (otherwise a validator rejects the null the type allows).
"""

SUPPORTED_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
TYPES = {"string", "number", "boolean", "integer", "object", "array", "null"}
KEYWORDS = {
    "type", "description", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems", "$defs", "$ref",
}
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def check_name(name: str) -> list[str]:
    ok = 1 <= len(name) <= 64 and set(name) <= NAME_CHARS
    return [] if ok else [f"function name {name!r} must be 1-64 of a-z A-Z 0-9 _ -"]


def check_strict(schema: dict) -> list[str]:
    """Every rule the schema breaks, as 'path: problem'; empty when it is strict-mode compatible."""
    problems: list[str] = []
    stats = {"properties": 0, "chars": 0, "enum_values": 0}
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        problems.append("$: the root must be an object schema, not anyOf")
    _node(schema, "$", 1, problems, stats)
    if stats["properties"] > 5000:
        problems.append(f"$: {stats['properties']} object properties, more than 5000")
    if stats["chars"] > 120_000:
        problems.append(f"$: {stats['chars']} characters of names, enums and consts, more than 120000")
    if stats["enum_values"] > 1000:
        problems.append(f"$: {stats['enum_values']} enum values, more than 1000")
    return problems


def _types(node: dict) -> set:
    t = node.get("type")
    if t is None:
        return set()
    return {t} if isinstance(t, str) else set(t)


def _node(node, path, depth, problems, stats):
    if not isinstance(node, dict):
        problems.append(f"{path}: a schema must be an object")
        return
    if depth > 10:
        problems.append(f"{path}: nested deeper than 10 levels")
    for key in node:
        if key not in KEYWORDS:
            problems.append(f"{path}: keyword {key!r} is not supported in strict mode")
    types = _types(node)
    if not types <= TYPES:
        problems.append(f"{path}: unsupported type {sorted(types - TYPES)}")
    if "format" in node and node["format"] not in SUPPORTED_FORMATS:
        problems.append(f"{path}: format {node['format']!r} is not supported")
    if "enum" in node:
        values = node["enum"]
        stats["enum_values"] += len(values)
        stats["chars"] += sum(len(str(v)) for v in values)
        if "null" in types and None not in values:
            problems.append(f"{path}: nullable enum must list null")
        for v in values:
            if v is None and "null" not in types and types:
                problems.append(f"{path}: enum lists null but the type does not allow it")
    if "const" in node:
        stats["chars"] += len(str(node["const"]))
    is_object = "object" in types or "properties" in node
    if is_object:
        props = node.get("properties", {})
        stats["properties"] += len(props)
        stats["chars"] += sum(len(k) for k in props)
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        required = node.get("required")
        if not isinstance(required, list) or set(required) != set(props):
            missing = sorted(set(props) - set(required or []))
            problems.append(f"{path}: every property must be required (missing {missing})")
        for name, sub in props.items():
            _node(sub, f"{path}.{name}", depth + 1, problems, stats)
    if "items" in node:
        _node(node["items"], f"{path}[]", depth + 1, problems, stats)
    for i, branch in enumerate(node.get("anyOf", [])):
        _node(branch, f"{path}.anyOf[{i}]", depth, problems, stats)
    for name, sub in node.get("$defs", {}).items():
        _node(sub, f"{path}.$defs.{name}", depth, problems, stats)


def test_the_checker_catches_what_the_rules_forbid():
    bad = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "minLength": 1},
            "b": {"type": ["string", "null"], "enum": ["x"]},
            "c": {"oneOf": [{"const": "x"}]},
            "d": {"type": "integer", "format": "uint8"},
            "e": {"type": "object", "properties": {"f": {"type": "string"}}},
        },
        "required": ["a", "b", "c"],
    }
    problems = "\n".join(check_strict(bad))
    for expected in [
        "'minLength' is not supported",
        "nullable enum must list null",
        "'oneOf' is not supported",
        "format 'uint8'",
        "$.e: additionalProperties must be false",
        "missing ['d', 'e']",
        "$: additionalProperties must be false",
    ]:
        assert expected in problems, (expected, problems)
    assert check_strict({"anyOf": [{"type": "object"}]})
    assert check_name("search.flights") and not check_name("search_flights")
