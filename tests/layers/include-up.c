/*
 * include-up.c - compiled as a file of the sqs/ layer, it includes a header
 * of worker/, a layer above: the build must refuse it (ctest
 * unit/layers-compile-up expects "worker.h: No such file").
 */
#include "sqs.h"
#include "worker.h"

int layer_probe_up(void);

int
layer_probe_up(void)
{
    return 0;
}
