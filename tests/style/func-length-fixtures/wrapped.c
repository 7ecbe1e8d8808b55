/* Fixture for tests/style/func-length-selftest, read as clang-format writes it.
 * func-length --max 10 expects: wrapped_params attributed returns_struct after_macros */
#include <stddef.h>

struct item {
  int a;
};

#define TWICE(fn)                                                                                  \
  static int fn(int x) {                                                                           \
    return 2 * x;                                                                                  \
  }

/* The '{' ends a continuation line of a parameter list wrapped at 100 columns. */
static int wrapped_params(const char *first_parameter_name, const char *second_parameter_name,
                          size_t third_parameter_length, int fourth_parameter_flags) {
  int n = 0;
  n += first_parameter_name != NULL;
  n += second_parameter_name != NULL;
  n += (int)third_parameter_length;
  n += fourth_parameter_flags;
  n *= 2;
  n -= 1;
  n += 3;
  n /= 2;
  n += 7;
  return n;
}

__attribute__((unused)) static int attributed(int a, int b) {
  int n = a;
  n += b;
  n *= 2;
  n -= 1;
  n += 3;
  n /= 2;
  n += 7;
  n += a;
  n -= b;
  n *= 3;
  return n;
}

static struct item *returns_struct(struct item *items, size_t count, size_t wanted_index_value,
                                   int strict) {
  if (!items)
    return NULL;
  if (wanted_index_value >= count)
    return strict ? NULL : items;
  /* a '}' in a comment and "}" in a string do not end the body */
  const char *s = "}";
  char c = '}';
  (void)s;
  (void)c;
  items += 0;
  return items + wanted_index_value;
}

TWICE(twice_a)
TWICE(twice_b)

int after_macros(int x) {
  int n = twice_a(x);
  n += twice_b(x);
  n *= 2;
  n -= 1;
  n += 3;
  n /= 2;
  n += 7;
  n += x;
  n -= x;
  n *= 3;
  return n;
}

/* Exactly ten lines: not flagged. */
int ten_lines(int x) {
  int n = x;
  n += 1;
  n += 2;
  n += 3;
  n += 4;
  n += 5;
  n += 6;
  n += 7;
  n += 8;
  return n;
}
