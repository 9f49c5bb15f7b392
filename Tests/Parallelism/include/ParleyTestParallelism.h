#ifndef PARLEY_TEST_PARALLELISM_H
#define PARLEY_TEST_PARALLELISM_H

/// The number of tests Swift Testing runs at once in this package's test run (see
/// parallelism.c); 0 when unlimited.
int parley_test_parallelization_width(void);

#endif
