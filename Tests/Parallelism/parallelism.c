// Most of Parley's tests start real servers, databases, browsers and terminals. Swift Testing
// starts every test at once by default; on a 2-core machine 700 of them then starve one
// another until timing waits fail (seen in CI, two different tests a run). This sets Swift
// Testing's width to 6 before its entry point reads the environment (a constructor runs as the
// test executable loads), unless the caller chose one: a run takes the same time and a loaded
// machine no longer fails tests. `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=N swift test`
// overrides it.
#include <stdlib.h>
#include "ParleyTestParallelism.h"

static const char *variable = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH";

__attribute__((constructor)) static void parley_limit_test_parallelism(void) {
    setenv(variable, "6", 0);
}

int parley_test_parallelization_width(void) {
    const char *value = getenv(variable);
    return value ? atoi(value) : 0;
}
