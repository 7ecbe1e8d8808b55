/* The objects vcctl writes, built as Volcano's vcctl builds them, and the inputs they come
 * from (resource lists, a command line, a YAML file). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kc_error.h"
#include "kc_quantity.h"
#include "vc.h"

/* resource.ParseQuantity's error text, which Volcano prints as it is. */
#define QUANTITY_FORMAT_ERR                                                                        \
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

int vc_resource_list(const char *spec, json_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (spec == NULL || spec[0] == '\0')
    return 0;
  json_t *res = json_object();
  if (res == NULL)
    return KC_ENOMEM;
  const char *p = spec;
  for (;;) {
    size_t n = strcspn(p, ",");
    const char *eq = memchr(p, '=', n);
    /* strings.Split(item, "=") must give exactly two parts. */
    if (eq == NULL || memchr(eq + 1, '=', n - (size_t)(eq + 1 - p)) != NULL) {
      json_decref(res);
      return kc_errorf(err, errlen, KC_EINVAL,
                       "invalid argument syntax %.*s, expected <resource>=<value>", (int)n, p);
    }
    size_t vlen = n - (size_t)(eq + 1 - p);
    kc_quantity q;
    if (kc_quantity_parsen(eq + 1, vlen, &q, NULL) != 0) {
      json_decref(res);
      return kc_errorf(err, errlen, KC_EINVAL, "%s", QUANTITY_FORMAT_ERR);
    }
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
    if (json_object_set_new(res, key, json_stringn(eq + 1, vlen)) != 0) {
      json_decref(res);
      return KC_ENOMEM;
    }
    if (p[n] == '\0')
      break;
    p += n + 1;
  }
  *out = res;
  return 0;
}

/* google/shlex: words split at unquoted whitespace; '...' keeps everything, "..." allows
 * \" \\ escapes, a backslash outside quotes escapes the next character; '#' at the start of a
 * word begins a comment. Nothing is expanded. */
int vc_shlex(const char *s, json_t **out, char *err, size_t errlen) {
  json_t *words = json_array();
  size_t cap = strlen(s) + 1;
  char *w = malloc(cap);
  if (words == NULL || w == NULL)
    goto nomem;
  size_t n = 0;
  bool inword = false;
  for (const char *p = s; *p;) {
    char c = *p++;
    if (!inword && isspace((unsigned char)c))
      continue;
    if (!inword && c == '#')
      break;
    if (isspace((unsigned char)c)) {
      if (json_array_append_new(words, json_stringn(w, n)) != 0)
        goto nomem;
      n = 0;
      inword = false;
      continue;
    }
    inword = true;
    if (c == '\\') {
      if (*p == '\0')
        goto bad_escape;
      w[n++] = *p++;
    } else if (c == '\'') {
      while (*p && *p != '\'')
        w[n++] = *p++;
      if (*p++ == '\0')
        goto unclosed;
    } else if (c == '"') {
      while (*p && *p != '"') {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
          p++;
        w[n++] = *p++;
      }
      if (*p++ == '\0')
        goto unclosed;
    } else {
      w[n++] = c;
    }
  }
  if (inword && json_array_append_new(words, json_stringn(w, n)) != 0)
    goto nomem;
  free(w);
  *out = words;
  return 0;
unclosed:
  free(w);
  json_decref(words);
  return kc_errorf(err, errlen, KC_EINVAL, "EOF found when expecting closing quote");
bad_escape:
  free(w);
  json_decref(words);
  return kc_errorf(err, errlen, KC_EINVAL, "EOF found after escape character");
nomem:
  free(w);
  json_decref(words);
  return KC_ENOMEM;
}

static json_t *resources(json_t *limits, json_t *requests) {
  json_t *r = json_object();
  if (r && limits)
    json_object_set(r, "limits", limits);
  if (r && requests)
    json_object_set(r, "requests", requests);
  return r;
}

int vc_job_from_flags(const vc_args *a, json_t **out, char *err, size_t errlen) {
  json_t *req = NULL, *lim = NULL, *cmd = NULL;
  *out = NULL;
  int rc = vc_resource_list(a->requests, &req, err, errlen);
  if (rc == 0)
    rc = vc_resource_list(a->limits, &lim, err, errlen);
  if (rc == 0 && a->command && a->command[0])
    rc = vc_shlex(a->command, &cmd, err, errlen);
  if (rc != 0)
    goto done;
  json_t *container =
      json_pack("{s:s, s:s, s:s, s:o}", "image", a->image ? a->image : "", "name", a->name,
                "imagePullPolicy", "IfNotPresent", "resources", resources(lim, req));
  if (container && cmd)
    json_object_set(container, "command", cmd);
  json_t *job = container
                    ? json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:s, s:[{s:i, s:{s:{s:s, "
                                "s:{s:s}}, s:{s:s, s:[o]}}}]}}",
                                "apiVersion", "batch.volcano.sh/v1alpha1", "kind", "Job",
                                "metadata", "name", a->name, "namespace", a->namespace, "spec",
                                "minAvailable", a->min, "schedulerName",
                                a->scheduler ? a->scheduler : "", "tasks", "replicas", a->replicas,
                                "template", "metadata", "name", a->name, "labels", "job.volcano.sh",
                                a->name, "spec", "restartPolicy", "Never", "containers", container)
                    : NULL;
  rc = job ? 0 : KC_ENOMEM;
  *out = job;
done:
  json_decref(req);
  json_decref(lim);
  json_decref(cmd);
  return rc;
}

static const char *meta_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

int vc_command_for(const json_t *obj, const char *api_version, const char *kind,
                   const char *namespace, const char *action, json_t **out) {
  const char *name = meta_str(obj, "name"), *uid = meta_str(obj, "uid");
  *out = NULL;
  if (name == NULL || uid == NULL)
    return KC_EINVAL;
  char gen[320], lower[64];
  size_t i;
  for (i = 0; action[i] && i < sizeof(lower) - 1; i++)
    lower[i] = (char)tolower((unsigned char)action[i]);
  lower[i] = '\0';
  snprintf(gen, sizeof(gen), "%s-%s-", name, lower);
  /* metav1.NewControllerRef: controller and blockOwnerDeletion both true. */
  json_t *ref = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", api_version, "kind", kind,
                          "name", name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1);
  if (ref == NULL)
    return KC_ENOMEM;
  json_t *cmd =
      json_pack("{s:s, s:s, s:{s:s, s:s, s:[O]}, s:O, s:s}", "apiVersion",
                "bus.volcano.sh/v1alpha1", "kind", "Command", "metadata", "generateName", gen,
                "namespace", namespace, "ownerReferences", ref, "target", ref, "action", action);
  json_decref(ref);
  *out = cmd;
  return cmd ? 0 : KC_ENOMEM;
}

json_t *vc_queue_new(const char *name, int weight, const char *state) {
  return json_pack("{s:s, s:s, s:{s:s}, s:{s:i}, s:{s:s}}", "apiVersion",
                   "scheduling.volcano.sh/v1beta1", "kind", "Queue", "metadata", "name", name,
                   "spec", "weight", weight, "status", "state", state ? state : "");
}

/* ---- YAML to JSON ---- */

static bool match_all(const char *s, const char *const *words) {
  for (; *words; words++)
    if (strcmp(s, *words) == 0)
      return true;
  return false;
}

/* A plain scalar's value under YAML 1.1's resolution as go-yaml v2 applies it. */
static json_t *plain_scalar(const char *s, size_t len) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                      "on",   "On",   "ON",   "y",   "Y",   NULL};
  static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                       "off",   "Off",   "OFF",   "n",  "N",  NULL};
  if (match_all(s, nulls))
    return json_null();
  if (match_all(s, trues))
    return json_true();
  if (match_all(s, falses))
    return json_false();
  char *end;
  errno = 0;
  long long i = strtoll(s, &end, 10);
  if (len > 0 && *end == '\0' && errno == 0 &&
      (isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+') && len > 1)))
    return json_integer(i);
  errno = 0;
  double d = strtod(s, &end);
  bool numeric = len > 0 && *end == '\0' && errno == 0 && strpbrk(s, "xXnNiI") == NULL;
  if (numeric)
    return json_real(d);
  return json_stringn(s, len);
}

/* libyaml's document keeps an alias as a reference to its anchor's node, so a small file can
 * describe a cycle or an exponential tree ("billion laughs"). The conversion follows
 * go-yaml v2's rules: a node that contains itself is refused, and so is a document where
 * most of what is decoded comes from expanding aliases (up to 99% of 400,000 nodes, falling
 * to 10% at 4,000,000). */
enum { MAX_DEPTH = 64, SEEN = 1, OPEN = 2 };

typedef struct conv {
  yaml_document_t *doc;
  unsigned char *state; /* per node: SEEN once converted, OPEN while being converted */
  size_t decoded, aliased;
  int alias_depth;
  const char *problem; /* why the conversion stopped, when it is not out of memory */
} conv;

static double allowed_alias_ratio(size_t decoded) {
  const double lo = 400000, hi = 4000000;
  if ((double)decoded <= lo)
    return 0.99;
  if ((double)decoded >= hi)
    return 0.10;
  return 0.99 - 0.89 * (((double)decoded - lo) / (hi - lo));
}

static json_t *convert(conv *cv, yaml_node_t *node, int depth);

static json_t *convert_seq(conv *cv, yaml_node_t *node, int depth) {
  json_t *arr = json_array();
  for (yaml_node_item_t *it = node->data.sequence.items.start;
       arr && it < node->data.sequence.items.top; it++) {
    json_t *v = convert(cv, yaml_document_get_node(cv->doc, *it), depth + 1);
    if (v == NULL || json_array_append_new(arr, v) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

static json_t *convert_map(conv *cv, yaml_node_t *node, int depth) {
  json_t *obj = json_object();
  for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
       obj && p < node->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(cv->doc, p->key);
    json_t *v = convert(cv, yaml_document_get_node(cv->doc, p->value), depth + 1);
    if (k == NULL || k->type != YAML_SCALAR_NODE || v == NULL ||
        json_object_setn_new(obj, (const char *)k->data.scalar.value, k->data.scalar.length, v) !=
            0) {
      json_decref(v);
      json_decref(obj);
      return NULL;
    }
  }
  return obj;
}

static json_t *convert_node(conv *cv, yaml_node_t *node, int depth) {
  switch (node->type) {
  case YAML_SCALAR_NODE: {
    const char *v = (const char *)node->data.scalar.value;
    size_t len = node->data.scalar.length;
    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
      return plain_scalar(v, len);
    return json_stringn(v, len);
  }
  case YAML_SEQUENCE_NODE:
    return convert_seq(cv, node, depth);
  case YAML_MAPPING_NODE:
    return convert_map(cv, node, depth);
  default:
    return NULL;
  }
}

static json_t *convert(conv *cv, yaml_node_t *node, int depth) {
  if (node == NULL)
    return NULL;
  if (depth > MAX_DEPTH) {
    cv->problem = "exceeded max depth of 64";
    return NULL;
  }
  unsigned char *st = &cv->state[node - cv->doc->nodes.start];
  if (*st & OPEN) {
    cv->problem = "an anchor's value contains itself";
    return NULL;
  }
  bool alias = *st & SEEN; /* a node met a second time is reached through an alias */
  cv->alias_depth += alias;
  cv->decoded++;
  cv->aliased += cv->alias_depth > 0;
  json_t *v = NULL;
  if (cv->aliased > 100 && cv->decoded > 1000 &&
      (double)cv->aliased / (double)cv->decoded > allowed_alias_ratio(cv->decoded)) {
    cv->problem = "document contains excessive aliasing";
  } else {
    *st |= SEEN | OPEN;
    v = convert_node(cv, node, depth);
    *st &= (unsigned char)~OPEN;
  }
  cv->alias_depth -= alias;
  return v;
}

/* The root of a loaded document as JSON; NULL with cv->problem set when it cannot be. */
static json_t *convert_doc(yaml_document_t *doc, yaml_node_t *root, const char **problem) {
  conv cv = {.doc = doc};
  size_t n = (size_t)(doc->nodes.top - doc->nodes.start);
  cv.state = calloc(n ? n : 1, 1);
  json_t *v = cv.state ? convert(&cv, root, 0) : NULL;
  free(cv.state);
  *problem = cv.problem;
  return v;
}

int vc_yaml_to_json(const char *text, size_t len, json_t **out, char *err, size_t errlen) {
  json_t *docs;
  *out = NULL;
  int rc = vc_yaml_docs_to_json(text, len, &docs, err, errlen);
  if (rc != 0)
    return rc;
  *out = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  if (*out == NULL)
    *out = json_object(); /* an empty file: an empty object, as yaml.Unmarshal leaves it */
  return *out ? 0 : KC_ENOMEM;
}

int vc_yaml_docs_to_json(const char *text, size_t len, json_t **out, char *err, size_t errlen) {
  yaml_parser_t parser;
  *out = NULL;
  json_t *docs = json_array();
  if (docs == NULL || !yaml_parser_initialize(&parser)) {
    json_decref(docs);
    return KC_ENOMEM;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int rc = 0;
  for (;;) {
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
      rc = kc_errorf(err, errlen, KC_EPARSE, "yaml: line %zu: %s", parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "invalid YAML");
      break;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root == NULL) { /* the end of the stream */
      yaml_document_delete(&doc);
      break;
    }
    const char *problem = NULL;
    json_t *v = convert_doc(&doc, root, &problem);
    yaml_document_delete(&doc);
    if (json_is_null(v)) { /* a document of comments only */
      json_decref(v);
      continue;
    }
    if (v == NULL && problem) {
      rc = kc_errorf(err, errlen, KC_EPARSE, "yaml: %s", problem);
      break;
    }
    if (v == NULL || !json_is_object(v)) {
      json_decref(v);
      rc = kc_errorf(err, errlen, KC_EPARSE,
                     "error unmarshaling JSON: a document is not a mapping with string keys");
      break;
    }
    json_array_append_new(docs, v);
  }
  yaml_parser_delete(&parser);
  if (rc != 0)
    json_decref(docs);
  else
    *out = docs;
  return rc;
}

/* ---- JSON to YAML ---- */

static int emit(yaml_emitter_t *e, yaml_event_t *ev) {
  return yaml_emitter_emit(e, ev) ? 0 : KC_EIO;
}

static int emit_scalar(yaml_emitter_t *e, const char *s, bool plain_ok) {
  yaml_event_t ev;
  yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain_ok,
                               !plain_ok,
                               plain_ok ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
  return emit(e, &ev);
}

/* A string that YAML would read back as something else (a number, a boolean, null, a
 * timestamp such as "2026-12-01T11:35:08Z") is quoted, as sigs.k8s.io/yaml quotes it. */
static bool needs_quotes(const char *s) {
  if (isdigit((unsigned char)s[0]) && isdigit((unsigned char)s[1]) &&
      isdigit((unsigned char)s[2]) && isdigit((unsigned char)s[3]) && s[4] == '-')
    return true;
  json_t *v = plain_scalar(s, strlen(s));
  bool q = !json_is_string(v);
  json_decref(v);
  return q;
}

static int emit_value(yaml_emitter_t *e, const json_t *v, int depth) {
  yaml_event_t ev;
  char num[64];
  int rc = 0;
  if (depth > 64)
    return KC_EIO;
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    rc = emit(e, &ev);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
      if (rc == 0)
        rc = emit_scalar(e, key, !needs_quotes(key));
      if (rc == 0)
        rc = emit_value(e, val, depth + 1);
    }
    yaml_mapping_end_event_initialize(&ev);
    return rc ? rc : emit(e, &ev);
  }
  case JSON_ARRAY: {
    yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
    rc = emit(e, &ev);
    size_t i;
    json_t *val;
    json_array_foreach(v, i, val) {
      if (rc == 0)
        rc = emit_value(e, val, depth + 1);
    }
    yaml_sequence_end_event_initialize(&ev);
    return rc ? rc : emit(e, &ev);
  }
  case JSON_STRING:
    return emit_scalar(e, json_string_value(v), !needs_quotes(json_string_value(v)));
  case JSON_INTEGER:
    snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return emit_scalar(e, num, true);
  case JSON_REAL:
    snprintf(num, sizeof(num), "%.17g", json_real_value(v));
    return emit_scalar(e, num, true);
  case JSON_TRUE:
    return emit_scalar(e, "true", true);
  case JSON_FALSE:
    return emit_scalar(e, "false", true);
  default:
    return emit_scalar(e, "null", true);
  }
}

static int write_file(void *data, unsigned char *buf, size_t size) {
  return fwrite(buf, 1, size, data) == size;
}

int vc_json_to_yaml(FILE *out, const json_t *obj) {
  yaml_emitter_t e;
  yaml_event_t ev;
  if (!yaml_emitter_initialize(&e))
    return KC_ENOMEM;
  yaml_emitter_set_output(&e, write_file, out);
  yaml_emitter_set_unicode(&e, 1);
  yaml_emitter_set_width(&e, -1);
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  int rc = emit(&e, &ev);
  yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
  if (rc == 0)
    rc = emit(&e, &ev);
  if (rc == 0)
    rc = emit_value(&e, obj, 0);
  yaml_document_end_event_initialize(&ev, 1);
  if (rc == 0)
    rc = emit(&e, &ev);
  yaml_stream_end_event_initialize(&ev);
  if (rc == 0)
    rc = emit(&e, &ev);
  yaml_emitter_delete(&e);
  return rc;
}
