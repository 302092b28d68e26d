/*
 * include-down.c - the same file as include-up.c without the include that
 * points up: it compiles, so the refusal of include-up.c is the layer's
 * doing and not the test's (ctest unit/layers-compile-down).
 */
#include "sqs.h"

int layer_probe_down(void);

int
layer_probe_down(void)
{
    return 0;
}
