/* The C tests' assertion. CHECK(cond) prints file, line and the condition when it is false and
 * counts it in `failures`; each test program's main returns non-zero when failures > 0. One test
 * program per translation unit, so the counter is static. */
#ifndef FASTCM_TESTS_CAPI_C_CHECK_H
#define FASTCM_TESTS_CAPI_C_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                \
    }                                                                            \
  } while (0)

#endif
