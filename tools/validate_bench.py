#!/usr/bin/python3
"""Validates a `vkformer bench --json-out` report against docs/bench.schema.json, and
checks the SVG chart beside it parses. Exit status 0 when both are valid."""
import json
import sys
import xml.dom.minidom

import jsonschema


def main():
    schema_path, report_path = sys.argv[1], sys.argv[2]
    with open(schema_path) as f:
        schema = json.load(f)
    with open(report_path) as f:
        report = json.load(f)
    jsonschema.validate(report, schema)
    runs = report["runs"]
    # bench all: both; bench ops or bench model: its own (the report's settings say which)
    for r in runs:
        what = r["settings"].get("benchmark", "all")
        want = {"all": ("ops", "model"), "ops": ("ops",), "model": ("model",)}[what]
        assert all(k in r for k in want), f"a `bench {what}` run lacks {want}"
    for svg in sys.argv[3:]:
        xml.dom.minidom.parse(svg)
    print(f"{report_path}: valid ({len(runs)} run(s))")


if __name__ == "__main__":
    main()
