/* Fuzz target for the watch stream's framing (kc_watch_parser): the input is a stream fed
 * in chunks whose sizes come from its first bytes. Whatever the split, the parser must give
 * the same frames and the same verdict as when the stream arrives whole, report only its
 * documented errors, and never deliver a frame that is not an object with a known type. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kc_error.h"
#include "kc_informer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  uint64_t frames;
  uint64_t hash; /* of the frames' types and serialised objects, in order */
} seen;

static int on_frame(kc_watch_type type, json_t *obj, void *ud) {
  seen *s = ud;
  if (!json_is_object(obj) || type > KC_WATCH_ERROR)
    abort();
  char *text = json_dumps(obj, JSON_SORT_KEYS | JSON_COMPACT);
  s->hash = s->hash * 31 + (uint64_t)type;
  for (const char *p = text; p && *p; p++)
    s->hash = s->hash * 131 + (unsigned char)*p;
  free(text);
  s->frames++;
  return 0;
}

/* Feeds data in chunks: sizes cycle through the given steps (0: all at once). */
static int run(const char *data, size_t size, const uint8_t *steps, size_t nsteps, seen *s) {
  kc_watch_parser p;
  char err[256] = "";
  /* A small frame limit so that KC_ETOOBIG is reachable by the fuzzer. */
  kc_watch_parser_init(&p, 4096);
  int rc = 0;
  size_t off = 0, k = 0;
  while (rc == 0 && off < size) {
    size_t n = nsteps ? (size_t)(steps[k++ % nsteps] % 64) + 1 : size;
    if (n > size - off)
      n = size - off;
    rc = kc_watch_parser_feed(&p, data + off, n, on_frame, s, err, sizeof(err));
    off += n;
  }
  if (rc == 0)
    rc = kc_watch_parser_finish(&p, err, sizeof(err));
  if (rc != 0 && rc != KC_ETOOBIG && rc != KC_EPARSE && rc != KC_ENOMEM)
    abort();
  if (rc != 0 && err[0] == '\0')
    abort(); /* every error says where */
  kc_frames_close(&p);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t nsteps = data[0] % 8;
  if (size < 1 + nsteps)
    return 0;
  const uint8_t *steps = data + 1;
  const char *stream = (const char *)data + 1 + nsteps;
  size_t len = size - 1 - nsteps;
  seen whole = {0}, split = {0};
  int a = run(stream, len, NULL, 0, &whole);
  int b = run(stream, len, steps, nsteps, &split);
  if (a != b || whole.frames != split.frames || whole.hash != split.hash)
    abort();
  return 0;
}
