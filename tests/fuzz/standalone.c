/* A driver for the fuzz targets when libFuzzer is not available (gcc builds): with file
 * arguments it runs each file once (corpus replay); with none it runs a fixed number of
 * deterministic random mutations of the seed files named in KILN_FUZZ_SEEDS (a
 * colon-separated list), so CI can run the targets under the sanitizers in seconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: the targets that set up once define it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  uint8_t *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    if (r == 0)
      break;
    n += r;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* One mutation: flip, insert, delete or duplicate a few bytes. */
static size_t mutate(uint8_t *buf, size_t len, size_t cap) {
  static const char tokens[] = "{}[]\":,0123456789.-+eEKiMGmnu tfal\\";
  int k = 1 + (int)(next() % 4);
  for (int i = 0; i < k && len > 0; i++) {
    size_t at = next() % len;
    switch (next() % 4) {
    case 0:
      buf[at] = (uint8_t)tokens[next() % (sizeof(tokens) - 1)];
      break;
    case 1:
      if (len < cap) {
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = (uint8_t)tokens[next() % (sizeof(tokens) - 1)];
        len++;
      }
      break;
    case 2:
      memmove(buf + at, buf + at + 1, len - at - 1);
      len--;
      break;
    default:
      buf[at] ^= (uint8_t)(1u << (next() % 8));
      break;
    }
  }
  return len;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  if (argc > 1) {
    for (int i = 1; i < argc; i++) {
      size_t n;
      uint8_t *d = slurp(argv[i], &n);
      if (!d) {
        fprintf(stderr, "cannot read %s\n", argv[i]);
        return 1;
      }
      LLVMFuzzerTestOneInput(d, n);
      free(d);
    }
    return 0;
  }
  const char *seeds = getenv("KILN_FUZZ_SEEDS");
  const char *iters_env = getenv("KILN_FUZZ_ITERATIONS");
  long iters = iters_env ? strtol(iters_env, NULL, 10) : 20000;
  char *list = strdup(seeds ? seeds : "");
  if (!list)
    return 1;
  int nseeds = 0;
  for (char *s = list, *end; *s; s = end) {
    end = strchr(s, ':');
    if (end)
      *end++ = '\0';
    else
      end = s + strlen(s);
    if (!*s)
      continue;
    size_t n;
    uint8_t *d = slurp(s, &n);
    if (!d) {
      fprintf(stderr, "cannot read seed %s\n", s);
      free(list);
      return 1;
    }
    nseeds++;
    size_t cap = n * 2 + 64;
    uint8_t *work = malloc(cap);
    if (!work)
      return 1;
    LLVMFuzzerTestOneInput(d, n);
    for (long i = 0; i < iters; i++) {
      size_t len = n;
      memcpy(work, d, n);
      for (int round = 0; round < 1 + (int)(next() % 8); round++)
        len = mutate(work, len, cap);
      LLVMFuzzerTestOneInput(work, len);
    }
    free(work);
    free(d);
  }
  free(list);
  /* Built-in short inputs so that a run without seeds still exercises the target. */
  static const char *const builtin[] = {"1.5Gi", "12Qi", "-0.000000001Ki", "{}", "[]", "\"x\""};
  for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
    LLVMFuzzerTestOneInput((const uint8_t *)builtin[i], strlen(builtin[i]));
  printf("ok: %d seeds, %ld mutations each\n", nseeds, iters);
  return 0;
}
