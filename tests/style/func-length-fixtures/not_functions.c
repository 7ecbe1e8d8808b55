/* Fixture for tests/style/func-length-selftest: long bodies that are not functions, and a long
 * main(), which is exempt.
 * func-length --max 10 expects: */
#include <stdio.h>

struct wide {
  int a;
  int b;
  int c;
  int d;
  int e;
  int f;
  int g;
  int h;
  int i;
  int j;
  int k;
};

enum colour {
  RED,
  GREEN,
  BLUE,
  CYAN,
  MAGENTA,
  YELLOW,
  BLACK,
  WHITE,
  GREY,
  BROWN,
  PINK,
};

static const int table[] = {
    1,  //
    2,  //
    3,  //
    4,  //
    5,  //
    6,  //
    7,  //
    8,  //
    9,  //
    10, //
    11, //
};

static const struct {
  const char *name;
  int (*fn)(int);
} handlers[] = {
    {"a", NULL}, //
    {"b", NULL}, //
    {"c", NULL}, //
    {"d", NULL}, //
    {"e", NULL}, //
    {"f", NULL}, //
    {"g", NULL}, //
    {"h", NULL}, //
    {"i", NULL}, //
    {"j", NULL}, //
    {"k", NULL}, //
};

int main(int argc, char **argv) {
  (void)argv;
  int n = argc;
  n += table[0];
  n += handlers[0].name != NULL;
  n += 1;
  n += 2;
  n += 3;
  n += 4;
  n += 5;
  n += 6;
  n += 7;
  printf("%d\n", n);
  return 0;
}
