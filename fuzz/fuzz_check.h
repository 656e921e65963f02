// What the fuzz targets share: a check that stops the run on a broken property, in the fuzzing
// build (libFuzzer then saves the input) and in the corpus replay alike (NDEBUG cannot turn it
// off, unlike assert).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
