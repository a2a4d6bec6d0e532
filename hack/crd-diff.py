#!/usr/bin/env python3
"""Compare generated CRDs with a reference set (e.g. OpenKruise v1.9.0's config/crd/bases).

usage: hack/crd-diff.py OURS_DIR REFERENCE_DIR [PLURAL ...]

For every CRD present in both directories (matched by metadata.name) it reports differences in
scope, names (shortNames, listKind, categories), versions (served, storage), subresources,
printer columns, and, per schema path: type, format, enum, default, required members,
x-kubernetes-* extensions, and paths present on one side only. Descriptions are ignored.
A reference directory is a development aid only and is never checked in.
Exit status: 0 when nothing differs, 1 otherwise.
"""
import os
import sys

import yaml

KEYS = ["type", "format", "enum", "default", "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type", "x-kubernetes-embedded-resource", "maximum", "minimum",
        "maxLength", "minLength", "pattern", "maxItems", "minItems", "x-kubernetes-validations"]


def load(d):
    out = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(d, f)) as fh:
            for doc in yaml.safe_load_all(fh):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    out[doc["metadata"]["name"]] = doc
    return out


def flatten(schema, path, out):
    if not isinstance(schema, dict):
        return
    node = {k: schema[k] for k in KEYS if k in schema}
    if "required" in schema:
        node["required"] = sorted(schema["required"])
    if "anyOf" in schema:
        node["anyOf"] = schema["anyOf"]
    out[path or "."] = node
    for name, child in (schema.get("properties") or {}).items():
        flatten(child, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        flatten(schema["items"], f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        flatten(schema["additionalProperties"], f"{path}{{}}", out)


def cols(v):
    return [(c.get("name"), c.get("type"), c.get("jsonPath"), c.get("priority", 0))
            for c in v.get("additionalPrinterColumns") or []]


def compare(name, ours, ref, problems):
    def p(msg):
        problems.append(f"{name}: {msg}")

    for key in ["group", "scope"]:
        if ours["spec"].get(key) != ref["spec"].get(key):
            p(f"{key}: ours={ours['spec'].get(key)!r} ref={ref['spec'].get(key)!r}")
    for key in ["kind", "listKind", "plural", "singular", "shortNames", "categories"]:
        a, b = ours["spec"]["names"].get(key), ref["spec"]["names"].get(key)
        if a != b:
            p(f"names.{key}: ours={a!r} ref={b!r}")
    ov = {v["name"]: v for v in ours["spec"]["versions"]}
    rv = {v["name"]: v for v in ref["spec"]["versions"]}
    if sorted(ov) != sorted(rv):
        p(f"versions: ours={sorted(ov)} ref={sorted(rv)}")
    for vn in sorted(set(ov) & set(rv)):
        a, b = ov[vn], rv[vn]
        for key in ["served", "storage", "deprecated"]:
            if a.get(key) != b.get(key):
                p(f"{vn}.{key}: ours={a.get(key)!r} ref={b.get(key)!r}")
        if (a.get("subresources") or {}) != (b.get("subresources") or {}):
            p(f"{vn}.subresources: ours={a.get('subresources')} ref={b.get('subresources')}")
        if cols(a) != cols(b):
            p(f"{vn}.printerColumns:\n    ours={cols(a)}\n    ref ={cols(b)}")
        fa, fb = {}, {}
        flatten(a["schema"]["openAPIV3Schema"], "", fa)
        flatten(b["schema"]["openAPIV3Schema"], "", fb)
        for path in sorted(set(fa) | set(fb)):
            if path not in fa:
                p(f"{vn} {path}: missing in ours")
            elif path not in fb:
                p(f"{vn} {path}: extra in ours")
            elif fa[path] != fb[path]:
                keys = sorted(set(fa[path]) | set(fb[path]))
                diff = {k: (fa[path].get(k), fb[path].get(k)) for k in keys
                        if fa[path].get(k) != fb[path].get(k)}
                p(f"{vn} {path}: " + ", ".join(f"{k} ours={x!r} ref={y!r}" for k, (x, y) in diff.items()))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ours, ref = load(sys.argv[1]), load(sys.argv[2])
    only = sys.argv[3:]
    problems = []
    for name in sorted(set(ours) | set(ref)):
        if only and name.split(".")[0] not in only:
            continue
        if name not in ours:
            problems.append(f"{name}: missing in ours")
        elif name not in ref:
            problems.append(f"{name}: not in reference")
        else:
            compare(name, ours[name], ref[name], problems)
    for line in problems:
        print(line)
    print(f"{len(problems)} difference(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
