/* The lean JSON decode (issue 32, item 3): what json_loadb builds, without
 * metadata.managedFields.
 *
 * Every object Kiln reads from the API server carries metadata.managedFields, the server-side
 * apply bookkeeping that no Kiln code reads and that is often the largest part of a custom
 * resource (a Job applied with kubectl has a fieldsV1 tree per manager, as large as its spec).
 * kc_json_lean_loadb parses with yajl's streaming parser and builds the jansson tree json_loadb
 * would build from the same bytes, except that the value of a "managedFields" key inside an
 * object that is itself the value of a "metadata" key is parsed (so still checked) but never
 * allocated.
 *
 * Same semantics as json_loadb(buf, len, flags, error) for flags 0 or JSON_ALLOW_NUL: the top
 * level must be an object or an array, integers are json_integer (one that does not fit
 * json_int_t fails, "too big integer"), reals json_real (one that overflows a double fails),
 * duplicate keys keep the last value, a key with a NUL byte fails, a string with one fails
 * unless JSON_ALLOW_NUL, nesting deeper than JSON_PARSER_MAX_DEPTH fails ("maximum parsing
 * depth reached"), and nothing but whitespace may follow the value. On failure error->text
 * says why and error->position is the byte offset (line and column are derived from it).
 *
 * Where yajl and jansson would read the same bytes differently (bytes that are not strict
 * UTF-8, \v or \f as whitespace, a NUL byte (jansson skips one after a number), a \u0000
 * escape without JSON_ALLOW_NUL, an escaped UTF-16 surrogate that is not part of a well-formed
 * pair), the input is handed to json_loadb itself
 * and managedFields dropped from its tree: the result is the same, only not lean. The API
 * server writes none of these. */
#ifndef KC_JSON_LEAN_H
#define KC_JSON_LEAN_H

#include <jansson.h>
#include <stddef.h>

json_t *kc_json_lean_loadb(const char *buf, size_t len, size_t flags, json_error_t *error);

/* Deletes metadata.managedFields wherever json_loadb's tree has it (the objects that are the
 * value of a "metadata" key): json_loadb followed by this builds what kc_json_lean_loadb does. */
void kc_json_drop_managed_fields(json_t *j);

#endif
