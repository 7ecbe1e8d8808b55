#!/usr/bin/env python3
"""Build manifests/crd/*.yaml from manifests/hack/crd-src/*.yaml.

The sources are ordinary CRD YAML with three extensions that this script resolves:

  x-kiln-openapi: <definition>   replaced by the schema of that definition in the API server's
                                 OpenAPI v3 document (/openapi/v3/api/v1), with every $ref
                                 inlined and turned into a structural CRD schema; the special
                                 name `resourceList` is a map of resource quantities.
  x-kiln-ref: <name>             replaced by a copy of x-kiln-definitions/<name> of the same file.
  x-kiln-definitions             (top level) the shared pieces above; dropped from the output.
  x-kiln-crd-ref: <file>#<prop>  replaced by the schema of property <prop> (dotted path below
                                 openAPIV3Schema) of another source, resolved in that file;
                                 its update-only rules (those reading oldSelf) are dropped, as
                                 an embedded copy is a template that may be edited. So the
                                 CronJob's, JobTemplate's and JobFlow's Job specs are the Job
                                 CRD's own spec, rules included, and follow it when it changes.
                                 x-kiln-drop: [keys] next to it removes top-level keys of the
                                 copy (a JobFlow's patch is a partial spec: no required tasks);
                                 x-kubernetes-validations in it drops every rule of the copy.

A rule may carry x-kiln-create-only: true: the CRD's own copy then runs it on create only
(`oldSelf.hasValue() || (rule)` with optionalOldSelf), for rules that read fields an update
may not change (the update rules hold them) and that Volcano's webhook checks on create only.
The API server runs every rule of the object on each write, status writes included, so this
is what keeps a Job's status writes cheap. Embedded copies (x-kiln-crd-ref) keep the rule
as it is: a template is validated whole whenever it is written.

Keys written next to an x-kiln-* marker (description, x-kubernetes-validations) override or
extend the inserted schema. Every field outside the generated Kubernetes types must carry a
description, or the script fails: `kubectl explain` shows them.

Usage:
  gen-crds.py [--openapi FILE | --kubectl KUBECTL] [--check]
With no --openapi, the document is fetched with `kubectl get --raw /openapi/v3/api/v1` (the
current KUBECONFIG must reach a kube-apiserver). --check compares instead of writing and exits
1 if a committed CRD differs from what the API server's document gives.
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_DIR = os.path.join(HERE, "crd-src")
OUT_DIR = os.path.join(os.path.dirname(HERE), "crd")

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIME_TYPES = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# The fields of an embedded ObjectMeta (a pod template's metadata) that mean something there;
# the rest (uid, resourceVersion, managedFields...) are set by the server on real objects only.
EMBEDDED_META_FIELDS = ["name", "generateName", "namespace", "labels", "annotations", "finalizers"]

# The same pattern the API server uses for a resource.Quantity in CRDs built by controller-gen.
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")

# JSONSchemaProps keys a CRD accepts; everything else in the OpenAPI document (patch strategy
# hints, group-version-kind tags...) is dropped.
ALLOWED_KEYS = {
    "description", "type", "format", "properties", "items", "additionalProperties", "required",
    "enum", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
    "pattern", "nullable", "uniqueItems", "multipleOf", "anyOf", "allOf", "oneOf", "not",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource", "x-kubernetes-validations",
}


class GenError(Exception):
    pass


def quantity_schema(description=None):
    s = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    if description:
        s = {"description": description, **s}
    return s


SENTENCE_END = re.compile(r"(?<![ .][a-z]\.[a-z]\.)(?<=[a-z0-9)\"'`]\.)\s+(?=[A-Z`\"])")


def first_sentences(node):
    """Keeps the first sentence of each description of a generated Kubernetes type. The full
    pod template documentation would make the Job CRD larger than the 256 KiB annotation that
    client-side `kubectl apply` writes; `kubectl explain pod.spec` has the rest."""
    if isinstance(node, dict):
        desc = node.get("description")
        if isinstance(desc, str):
            first = SENTENCE_END.split(desc.strip(), 1)[0].split("\n\n", 1)[0]
            node["description"] = " ".join(first.split())
        for key, value in node.items():
            if key != "description":
                first_sentences(value)
    elif isinstance(node, list):
        for value in node:
            first_sentences(value)


class Resolver:
    """Inlines OpenAPI v3 definitions into structural CRD schemas."""

    def __init__(self, doc):
        self.defs = doc.get("components", {}).get("schemas", {})
        if not self.defs:
            raise GenError("the OpenAPI document has no components.schemas")

    def definition(self, name):
        if name == "resourceList":
            # Bounded so that CEL rules comparing quantities (Queue) stay within the cost
            # budget: 64 resource names, quantities of at most 64 characters.
            value = quantity_schema()
            value["maxLength"] = 64
            return {"type": "object", "maxProperties": 64, "additionalProperties": value}
        return self.resolve_ref("#/components/schemas/" + name, [])

    def resolve_ref(self, ref, stack):
        name = ref.rsplit("/", 1)[-1]
        if name in stack:
            raise GenError("recursive type %s (via %s)" % (name, " > ".join(stack)))
        if name == QUANTITY:
            return quantity_schema()
        if name == INT_OR_STRING:
            return {"anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True}
        if name in TIME_TYPES:
            return {"type": "string", "format": "date-time"}
        if name not in self.defs:
            raise GenError("definition %s is not in the OpenAPI document" % name)
        schema = self.convert(self.defs[name], stack + [name])
        first_sentences(schema)
        if name == OBJECT_META:
            props = schema.get("properties", {})
            schema["properties"] = {k: props[k] for k in EMBEDDED_META_FIELDS if k in props}
        return schema

    def convert(self, node, stack):
        if not isinstance(node, dict):
            return node
        # A $ref, alone or wrapped in allOf to carry a description or default next to it.
        target = None
        if "$ref" in node:
            target = node["$ref"]
        elif "allOf" in node and len(node["allOf"]) == 1 and "$ref" in node["allOf"][0]:
            target = node["allOf"][0]["$ref"]
        if target is not None:
            out = self.resolve_ref(target, stack)
            if node.get("description"):
                out["description"] = node["description"]
            for key in ("x-kubernetes-list-type", "x-kubernetes-list-map-keys",
                        "x-kubernetes-map-type"):
                if key in node:
                    out[key] = node[key]
            return self.clean(out, node.get("default"))

        out = {}
        for key, value in node.items():
            if key not in ALLOWED_KEYS:
                continue
            if key == "properties":
                out[key] = {k: self.convert(v, stack) for k, v in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.convert(value, stack)
            elif key in ("anyOf", "allOf", "oneOf"):
                out[key] = [self.convert(v, stack) for v in value]
            else:
                out[key] = copy.deepcopy(value)
        return self.clean(out, node.get("default"))

    @staticmethod
    def clean(out, default):
        # Zero-value defaults ("" for a required name, {} for a struct) would let the API server
        # fill in exactly what validation should insist on, so only meaningful scalar defaults
        # (protocol: TCP) are kept.
        out.pop("default", None)
        if default not in (None, "", 0, False, {}, []) and not isinstance(default, (dict, list)):
            out["default"] = default
        if out.get("type") == "array" and out.get("x-kubernetes-list-type") == "map":
            item = out.get("items", {})
            required = set(item.get("required", []))
            for key in out.get("x-kubernetes-list-map-keys", []):
                prop = item.get("properties", {}).get(key, {})
                if key not in required and "default" not in prop:
                    # A map key must be required or defaulted in a CRD; without either the
                    # list stays atomic, as the Kubernetes API treats it for validation.
                    out["x-kubernetes-list-type"] = "atomic"
                    out.pop("x-kubernetes-list-map-keys", None)
                    break
        if out.get("type") == "object" and "properties" not in out \
                and "additionalProperties" not in out and "x-kubernetes-int-or-string" not in out:
            # A free-form object (for example RawExtension) keeps its content.
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out


def drop_update_rules(node):
    """Removes the rules that read oldSelf (they hold a Job's spec fixed after creation)."""
    if isinstance(node, list):
        for value in node:
            drop_update_rules(value)
        return
    if not isinstance(node, dict):
        return
    rules = node.get("x-kubernetes-validations")
    if rules is not None:
        kept = [r for r in rules if "oldSelf" not in r.get("rule", "")]
        if kept:
            node["x-kubernetes-validations"] = kept
        else:
            node.pop("x-kubernetes-validations")
    for key, value in node.items():
        if key != "x-kubernetes-validations":
            drop_update_rules(value)


def create_only(node, embedded):
    """Resolves x-kiln-create-only on rules below node (see the module docstring)."""
    if isinstance(node, list):
        for value in node:
            create_only(value, embedded)
        return
    if not isinstance(node, dict):
        return
    rules = node.get("x-kubernetes-validations")
    if rules is not None:
        out = []
        for r in rules:
            r = dict(r)
            if r.pop("x-kiln-create-only", False) and not embedded:
                rest = {k: v for k, v in r.items() if k != "rule"}
                r = {"rule": "oldSelf.hasValue() || (%s)" % r["rule"], "optionalOldSelf": True}
                r.update(rest)
            out.append(r)
        node["x-kubernetes-validations"] = out
    for key, value in node.items():
        if key != "x-kubernetes-validations":
            create_only(value, embedded)


def drop_all_rules(node):
    """Removes every CEL rule below node (a partial spec is not validated as a whole one)."""
    if isinstance(node, list):
        for value in node:
            drop_all_rules(value)
    elif isinstance(node, dict):
        node.pop("x-kubernetes-validations", None)
        for value in node.values():
            drop_all_rules(value)


def crd_ref(ref, resolver, path):
    """The expanded schema x-kiln-crd-ref names (see the module docstring)."""
    fname, _, prop = ref.partition("#")
    src_path = os.path.join(SRC_DIR, fname)
    if not prop or not os.path.exists(src_path):
        raise GenError("%s: bad x-kiln-crd-ref %s" % (path, ref))
    with open(src_path, encoding="utf-8") as f:
        src = yaml.safe_load(f)
    definitions = src.pop("x-kiln-definitions", {}) or {}
    node = src["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in prop.split("."):
        props = node.get("properties", {})
        if part not in props:
            raise GenError("%s: x-kiln-crd-ref %s: no property %s" % (path, ref, part))
        node = props[part]
    missing = []
    out = expand(node, resolver, definitions, path, missing)
    if missing:
        raise GenError("%s: fields without a description: %s" % (fname, ", ".join(missing)))
    create_only(out, True)
    drop_update_rules(out)
    return out


def expand(node, resolver, definitions, path, missing, generated=False):
    """Resolves x-kiln-* markers below node, and records fields without a description."""
    if isinstance(node, list):
        return [expand(v, resolver, definitions, path, missing, generated) for v in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "x-kiln-openapi" in node:
        base = resolver.definition(node.pop("x-kiln-openapi"))
        extra_rules = node.pop("x-kubernetes-validations", None)
        base.update(node)
        if extra_rules:
            base["x-kubernetes-validations"] = extra_rules
        return expand(base, resolver, definitions, path, missing, True)
    if "x-kiln-crd-ref" in node:
        base = crd_ref(node.pop("x-kiln-crd-ref"), resolver, path)
        drop = node.pop("x-kiln-drop", [])
        for key in drop:
            base.pop(key, None)
        if "x-kubernetes-validations" in drop:
            drop_all_rules(base)
        base.update(node)
        return base
    if "x-kiln-ref" in node:
        name = node.pop("x-kiln-ref")
        if name not in definitions:
            raise GenError("%s: unknown x-kiln-ref %s" % (path, name))
        base = copy.deepcopy(definitions[name])
        base.update(node)
        return expand(base, resolver, definitions, path, missing, generated)
    out = {}
    for key, value in node.items():
        if key == "properties":
            props = {}
            for name, sub in value.items():
                sub_path = path + "." + name
                resolved = expand(sub, resolver, definitions, sub_path, missing, generated)
                if not resolved.get("description") and name != "metadata" and not generated:
                    missing.append(sub_path)
                props[name] = resolved
            out[key] = props
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = expand(value, resolver, definitions, path + "[]", missing, generated)
        elif key == "openAPIV3Schema":
            out[key] = expand(value, resolver, definitions, "", missing, generated)
        else:
            out[key] = expand(value, resolver, definitions, path, missing, generated)
    return out


def fill_descriptions(node, name="", parent_desc=""):
    """Kubernetes leaves a few fields without a description; give them one so that every
    field of the CRD explains itself."""
    if not isinstance(node, dict):
        return 0
    count = 0
    for key, sub in node.get("properties", {}).items():
        if isinstance(sub, dict) and not sub.get("description") and key != "metadata":
            sub["description"] = "%s (Kubernetes field %s.%s)" % (key, name or "object", key)
            count += 1
        count += fill_descriptions(sub, key)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            count += fill_descriptions(node[key], name)
    return count


class Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper, data):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


Dumper.add_representer(str, _str_presenter)


def render(src_path, resolver):
    with open(src_path, encoding="utf-8") as f:
        src = yaml.safe_load(f)
    definitions = src.pop("x-kiln-definitions", {}) or {}
    missing = []
    crd = expand(src, resolver, definitions, "", missing)
    create_only(crd, False)
    if missing:
        raise GenError("%s: fields without a description: %s"
                       % (os.path.basename(src_path), ", ".join(missing)))
    for version in crd["spec"]["versions"]:
        fill_descriptions(version["schema"]["openAPIV3Schema"])
    header = ("# Generated by manifests/hack/gen-crds.py from manifests/hack/crd-src/%s\n"
              "# and the API server's OpenAPI document. Do not edit; edit the source and rerun.\n"
              % os.path.basename(src_path))
    body = yaml.dump(crd, Dumper=Dumper, sort_keys=False, width=100, allow_unicode=True)
    return header + "---\n" + body


def load_openapi(args):
    if args.openapi:
        with open(args.openapi, encoding="utf-8") as f:
            return json.load(f)
    try:
        raw = subprocess.run([args.kubectl, "get", "--raw", "/openapi/v3/api/v1"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        stderr = getattr(e, "stderr", "") or ""
        raise GenError("cannot fetch /openapi/v3/api/v1 with %s: %s %s"
                       % (args.kubectl, e, stderr.strip()))
    return json.loads(raw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--openapi", help="OpenAPI v3 document of core/v1 (JSON) instead of kubectl")
    ap.add_argument("--kubectl", default="kubectl", help="kubectl to fetch the document with")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed CRDs instead of writing them")
    args = ap.parse_args()
    try:
        resolver = Resolver(load_openapi(args))
        stale = []
        for name in sorted(os.listdir(SRC_DIR)):
            if not name.endswith(".yaml"):
                continue
            text = render(os.path.join(SRC_DIR, name), resolver)
            out = os.path.join(OUT_DIR, name)
            if args.check:
                try:
                    with open(out, encoding="utf-8") as f:
                        if f.read() != text:
                            stale.append(name)
                except FileNotFoundError:
                    stale.append(name)
                continue
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
            print("wrote %s (%d bytes)" % (os.path.relpath(out), len(text)))
        if stale:
            print("out of date (rerun manifests/hack/gen-crds.py): " + ", ".join(stale),
                  file=sys.stderr)
            return 1
    except GenError as e:
        print("gen-crds: " + str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
