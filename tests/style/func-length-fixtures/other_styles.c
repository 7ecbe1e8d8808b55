/* Fixture for tests/style/func-length-selftest: layouts clang-format would not write, which the
 * checker must still see.
 * func-length --max 10 expects: type_on_its_own_line brace_on_its_own_line brace_indented */
// clang-format off
static int
type_on_its_own_line(int x)
{
  int n = x;
  n += 1;
  n += 2;
  n += 3;
  n += 4;
  n += 5;
  n += 6;
  n += 7;
  n += 8;
  n += 9;
  return n;
}

static int brace_on_its_own_line(int x,
                                 int y)
{
  int n = x + y;
  n += 1;
  n += 2;
  n += 3;
  n += 4;
  n += 5;
  n += 6;
  n += 7;
  n += 8;
  n += 9;
  return n;
}

static int brace_indented(int x, int y)
  {
  int n = x + y;
  n += 1;
  n += 2;
  n += 3;
  n += 4;
  n += 5;
  n += 6;
  n += 7;
  n += 8;
  n += 9;
  return n;
  }

#define OPEN {
#define CLOSE }

static int short_one(int x) { return x; }
// clang-format on
