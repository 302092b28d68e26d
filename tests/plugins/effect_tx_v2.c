/*
 * effect_tx_v2.c - fixture: effect_tx built as version "2", to prove that a
 * plugin swapped by rename and a reload runs the new code.
 * Used by: test_reload.py, test_reload_load.py.
 */
#define EFFECT_VERSION "2"
#include "effect_tx.c"
